/*
 * glibc 2.35 gave hypot a new symbol version (hypot@GLIBC_2.35). QuickJS
 * calls hypot for Math.hypot, which would make the executable need glibc
 * 2.35, while the wheel promises glibc 2.34 (manylinux_2_34: RHEL 9). This
 * definition of hypot, linked ahead of libm, forwards to the version every
 * x86_64 glibc has (GLIBC_2.2.5); the result is the same function. It is
 * hidden, so the dynamic linker never takes it for libm's.
 */
extern double dsh_glibc_hypot(double x, double y);
__asm__(".symver dsh_glibc_hypot,hypot@GLIBC_2.2.5");

__attribute__((visibility("hidden"))) double hypot(double x, double y) {
    return dsh_glibc_hypot(x, y);
}
