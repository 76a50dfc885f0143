//! The size a large image is scaled down to, as the official runtime
//! computes it (measured on 4000×3000, 5000×1000, 8192×600, 7777×3333 and
//! other shapes; the unit tests hold every measured pair).
//!
//! The longer side is scaled by √(limit / pixels) and rounded down, the
//! shorter side follows the aspect ratio (rounded), and the longer side
//! shrinks by one pixel until the pair fits the limit. The image is then
//! fitted inside that box keeping its aspect ratio, each side rounded.

/// The pixel count an image may have before it is scaled down (2048²).
pub(crate) const MAX_PIXELS: u64 = 2048 * 2048;

/// The size `width`×`height` is scaled down to so that it holds at most
/// `max_pixels`, or `None` when it already does.
pub(crate) fn fit(width: u32, height: u32, max_pixels: u64) -> Option<(u32, u32)> {
    let (w, h) = (u64::from(width), u64::from(height));
    if w == 0 || h == 0 || w * h <= max_pixels {
        return None;
    }
    let (long, short) = if w >= h { (w, h) } else { (h, w) };
    let scale = (max_pixels as f64 / (w * h) as f64).sqrt();
    // Truncation is the rule: the scaled longer side rounded down.
    let mut box_long = ((long as f64 * scale).floor() as u64).max(1);
    let mut box_short = follow(box_long, long, short);
    while box_long > 1 && box_long * box_short > max_pixels {
        box_long -= 1;
        box_short = follow(box_long, long, short);
    }
    let ratio = f64::min(
        box_long as f64 / long as f64,
        box_short as f64 / short as f64,
    );
    let side = |full: u64, bound: u64| ((full as f64 * ratio).round() as u64).clamp(1, bound);
    let (new_long, new_short) = (side(long, box_long), side(short, box_short));
    let (new_w, new_h) = if w >= h {
        (new_long, new_short)
    } else {
        (new_short, new_long)
    };
    // Both sides are at most the original ones, which are u32.
    Some((
        u32::try_from(new_w).unwrap_or(width),
        u32::try_from(new_h).unwrap_or(height),
    ))
}

/// The shorter side that keeps the aspect ratio for a longer side of
/// `new_long`, rounded half up, at least 1.
fn follow(new_long: u64, long: u64, short: u64) -> u64 {
    ((2 * new_long * short + long) / (2 * long)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A width and a height.
    type Size = (u32, u32);

    /// Every size the official runtime was seen to produce.
    const MEASURED: &[(Size, Size)] = &[
        ((4000, 3000), (2364, 1773)),
        ((3000, 4000), (1773, 2364)),
        ((2049, 2048), (2048, 2047)),
        ((5000, 1000), (4578, 916)),
        ((1000, 5000), (916, 4578)),
        ((3000, 2000), (2508, 1672)),
        ((2500, 2500), (2048, 2048)),
        ((3000, 3000), (2048, 2048)),
        ((8000, 8000), (2048, 2048)),
        ((7000, 3001), (3127, 1341)),
        ((3333, 7777), (1340, 3127)),
        ((8192, 600), (7564, 554)),
        ((4097, 1025), (4093, 1024)),
        ((6000, 700), (5991, 699)),
    ];

    #[test]
    fn sizes_match_the_official_runtime() {
        for &((w, h), expected) in MEASURED {
            assert_eq!(fit(w, h, MAX_PIXELS), Some(expected), "{w}x{h}");
        }
    }

    #[test]
    fn images_within_the_limit_keep_their_size() {
        for (w, h) in [(2048, 2048), (4001, 1048), (5000, 3), (1, 1), (0, 9000)] {
            assert_eq!(fit(w, h, MAX_PIXELS), None, "{w}x{h}");
        }
    }

    #[test]
    fn every_result_fits_keeps_the_orientation_and_the_shape() {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |range: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            1 + rng % range
        };
        for _ in 0..20_000 {
            let (w, h) = (next(8192) as u32, next(8192) as u32);
            let Some((nw, nh)) = fit(w, h, MAX_PIXELS) else {
                assert!(u64::from(w) * u64::from(h) <= MAX_PIXELS);
                continue;
            };
            assert!(
                u64::from(nw) * u64::from(nh) <= MAX_PIXELS,
                "{w}x{h} -> {nw}x{nh}"
            );
            assert!(
                nw <= w && nh <= h && nw >= 1 && nh >= 1,
                "{w}x{h} -> {nw}x{nh}"
            );
            assert!(w < h || nw >= nh, "{w}x{h} -> {nw}x{nh}");
            assert!(w > h || nw <= nh, "{w}x{h} -> {nw}x{nh}");
            // The shorter side within a pixel of the original aspect ratio.
            let (long, short, new_long, new_short) = if w >= h {
                (w, h, nw, nh)
            } else {
                (h, w, nh, nw)
            };
            let expected = f64::from(new_long) * f64::from(short) / f64::from(long);
            assert!(
                (expected - f64::from(new_short)).abs() <= 1.0,
                "{w}x{h} -> {nw}x{nh}"
            );
            // Not much smaller than the limit allows.
            let area = u64::from(nw) * u64::from(nh);
            assert!(area * 100 >= MAX_PIXELS * 99, "{w}x{h} -> {nw}x{nh}");
        }
    }

    #[test]
    fn extreme_shapes_keep_a_side_of_at_least_one_pixel() {
        assert_eq!(fit(5_000_000, 1, 1000), Some((1000, 1)));
        assert_eq!(fit(1, 5_000_000, 1000), Some((1, 1000)));
        assert_eq!(fit(100, 100, 1), Some((1, 1)));
    }
}
