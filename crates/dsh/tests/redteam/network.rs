//! Network attacks (127.0.0.1 only): with `DSH_SANDBOX_NETWORK=off`
//! commands can neither connect nor bind TCP (Landlock ABI 4; refused
//! closed below it), and `web_fetch` refuses loopback; abstract unix
//! sockets outside the sandbox are out of reach in every restricted mode
//! from ABI 6 (below it they stay reachable, as documented).

use crate::harness::{Attack, Level, RESTRICTED, assert_fails_closed, bash, call, landlock, level};
use dsh_tools::NETWORK_LANDLOCK_ABI;
use serde_json::json;
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A loopback listener that accepts (and drops) connections forever, and
/// the count of connections it accepted.
fn listener() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("addr: {e}"))
        .port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for _ in listener.incoming() {
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, accepted)
}

fn connect(port: u16) -> String {
    format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
}

const BIND: &str = "python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print('bound')\" 2>&1 | tail -1";

#[test]
fn network_off_denies_tcp_and_loopback_fetches() {
    let (port, accepted) = listener();
    for mode in RESTRICTED {
        let mut attack = Attack::start(mode, &[("DSH_SANDBOX_NETWORK", "off")]);
        let results = attack.run(&[
            bash(&connect(port)),
            bash(BIND),
            call(
                "web_fetch",
                json!({"url": format!("http://127.0.0.1:{port}/")}),
            ),
            call(
                "web_fetch",
                json!({"url": format!("http://localhost:{port}/")}),
            ),
        ]);
        assert!(
            !results[0].text.contains("connected"),
            "{}",
            results[0].text
        );
        let support = landlock();
        if level() == Level::FailsClosed {
            assert_fails_closed(&results[0], mode);
            assert_fails_closed(&results[1], mode);
        } else if support.abi < NETWORK_LANDLOCK_ABI {
            // ABI 3: the sandbox could confine files but not TCP, so the
            // command is refused rather than run with the network open.
            let offered = match support.lowered_from {
                Some(kernel) => format!(
                    "DSH_LANDLOCK_ABI_MAX={abi} lowers the kernel's Landlock ABI {kernel} to ABI {abi}",
                    abi = support.abi
                ),
                None => format!("the kernel offers Landlock ABI {}", support.abi),
            };
            for result in &results[..2] {
                assert!(result.is_error, "{}", result.text);
                assert_eq!(
                    result.text,
                    format!(
                        "Error: sandbox mode \"{mode}\" is in force but cannot be enforced here (DSH_SANDBOX_NETWORK=off needs Landlock ABI 4 but {offered}), so the command was not run: running it without confinement is refused. Use a Linux kernel with Landlock ABI 4 or newer (Linux 6.7+) enabled, set DSH_SANDBOX_NETWORK=on, or run the session in danger-full-access mode."
                    )
                );
            }
        } else {
            assert!(
                results[0].text.contains("Permission denied"),
                "{}",
                results[0].text
            );
            assert!(
                results[1].text.contains("PermissionError"),
                "{}",
                results[1].text
            );
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 0, "{mode}: a connection");
        for fetch in &results[2..] {
            assert!(fetch.is_error);
            assert!(
                fetch.text.contains("loopback, private or link-local"),
                "{}",
                fetch.text
            );
        }
    }
}

#[test]
fn network_is_open_by_default_as_upstream() {
    let (port, accepted) = listener();
    let mut attack = Attack::start("workspace-write", &[]);
    let results = attack.run(&[bash(&connect(port)), bash(BIND)]);
    if level() == Level::FailsClosed {
        assert_fails_closed(&results[0], "workspace-write");
        assert_fails_closed(&results[1], "workspace-write");
        return;
    }
    assert_eq!(results[0].text, "connected\n");
    assert_eq!(results[1].text, "bound\n");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while accepted.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[test]
fn a_bad_network_setting_stops_the_launch() {
    let out = crate::common::dsh(&std::env::temp_dir())
        .args(["--profile", "sdk"])
        .env("DSH_HOME", std::env::temp_dir().join("dsh-redteam-unused"))
        .env("DSH_SANDBOX_NETWORK", "maybe")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("DSH_SANDBOX_NETWORK must be \"on\" or \"off\", got \"maybe\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// From ABI 6 Landlock scopes abstract unix sockets: one outside the
/// sandbox is unreachable. At ABI 3 to 5 nothing scopes them and the docs
/// say so ("abstract sockets stay reachable"): this test holds that text
/// to the code, and fails the day a fallback closes the gap.
#[test]
fn abstract_sockets_outside_the_sandbox_are_unreachable() {
    let name = format!("dsh-redteam-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let script = format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0{name}'); print('reached')\" 2>&1 | tail -1"
    );
    for mode in RESTRICTED {
        let mut attack = Attack::start(mode, &[]);
        let results = attack.run(&[bash(&script)]);
        match level() {
            Level::Scoped => {
                assert!(
                    !results[0].text.contains("reached"),
                    "{mode}: {}",
                    results[0].text
                );
                assert!(
                    results[0].text.contains("PermissionError"),
                    "{}",
                    results[0].text
                );
            }
            Level::PidNamespace => assert_eq!(results[0].text, "reached\n", "{mode}"),
            Level::FailsClosed => assert_fails_closed(&results[0], mode),
        }
    }
    let mut free = Attack::start("danger-full-access", &[]);
    assert_eq!(free.run(&[bash(&script)])[0].text, "reached\n");
}
