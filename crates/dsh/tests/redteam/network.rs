//! Network attacks (127.0.0.1 only): with `DSH_SANDBOX_NETWORK=off`
//! commands can neither connect nor bind TCP, and `web_fetch` refuses
//! loopback; abstract unix sockets outside the sandbox are out of reach in
//! every restricted mode.

use crate::harness::{Attack, RESTRICTED, bash, call};
use serde_json::json;
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};

/// A loopback listener that accepts (and drops) connections forever.
fn listener() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("addr: {e}"))
        .port();
    std::thread::spawn(move || for _ in listener.incoming() {});
    port
}

fn connect(port: u16) -> String {
    format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
}

const BIND: &str = "python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print('bound')\" 2>&1 | tail -1";

#[test]
fn network_off_denies_tcp_and_loopback_fetches() {
    let port = listener();
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
    let port = listener();
    let mut attack = Attack::start("workspace-write", &[]);
    let results = attack.run(&[bash(&connect(port)), bash(BIND)]);
    assert_eq!(results[0].text, "connected\n");
    assert_eq!(results[1].text, "bound\n");
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
    let mut free = Attack::start("danger-full-access", &[]);
    assert_eq!(free.run(&[bash(&script)])[0].text, "reached\n");
}
