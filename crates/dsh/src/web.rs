//! `dsh web [--host A] [--port N] [--no-open] [--public-url U]
//! [--trusted-host H]… [--provider P] [--model M] [--mcp F]…`: the browser
//! page (see `dsh_web`).
//!
//! The route of new sessions is chosen as for `dsh acp`. The address must
//! be one concrete IP literal of a local interface: a wildcard (`0.0.0.0`,
//! `::`) would serve every network the machine is on.

use crate::cli::WebArgs;
use crate::launch::Launch;
use dsh_web::WebConfig;
use std::net::IpAddr;
use std::process::ExitCode;

/// The `--host` address, or why it is refused.
fn host(text: &str) -> Result<IpAddr, String> {
    let address: IpAddr = text
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| {
            format!("--host must be one IPv4 or IPv6 literal of a local interface, got \"{text}\"")
        })?;
    let wildcard = address.is_unspecified()
        || address.is_multicast()
        || matches!(address, IpAddr::V4(v4) if v4.is_broadcast());
    if wildcard {
        return Err(format!(
            "--host {text} is not one concrete address: wildcard addresses are refused (they serve every network of the machine); give the address of one local interface, e.g. 127.0.0.1"
        ));
    }
    Ok(address)
}

/// Opens `url` in the desktop's browser, if there is one to ask.
fn open(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(err) = spawned {
        tracing::info!("the page was not opened ({opener}: {err}); open the printed URL");
    }
}

/// Serves the page until SIGTERM or SIGINT; exit 0 then.
pub fn run(mut launch: Box<Launch>, args: WebArgs) -> ExitCode {
    let address = match host(&args.host) {
        Ok(address) => address,
        Err(err) => {
            eprintln!("dsh web: {err}");
            return ExitCode::from(2);
        }
    };
    if let Some(url) = &args.public_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        eprintln!("dsh web: --public-url must be an http:// or https:// URL, got \"{url}\"");
        return ExitCode::from(2);
    }
    let (provider, model) =
        match launch.server_route(args.provider.as_deref(), args.model.as_deref(), &args.mcp) {
            Ok(route) => route,
            Err(err) => {
                eprintln!("dsh: {err}");
                return ExitCode::from(1);
            }
        };
    let runtime = match crate::launch::runtime() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("dsh: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let cwd = launch.process_cwd.clone();
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(dsh_web::TlsFiles {
            cert: cwd.join(cert),
            key: cwd.join(key),
        }),
        _ => None,
    };
    let config = WebConfig {
        server: launch.server_config(),
        host: address,
        port: args.port,
        public_url: args.public_url,
        trusted_hosts: args.trusted_hosts,
        cwd,
        provider,
        model,
        tls,
    };
    let no_open = args.no_open;
    let code = runtime.block_on(async move {
        let Some(signal) = crate::launch::stop_signal() else {
            return 1;
        };
        let interrupted = std::sync::atomic::AtomicBool::new(false);
        let stop = async {
            if signal.await {
                interrupted.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        };
        let opened = |url: &str| {
            if !no_open {
                open(url);
            }
        };
        match dsh_web::serve(config, opened, stop).await {
            Err(err) => {
                eprintln!("dsh web: {err}");
                1
            }
            Ok(()) if interrupted.load(std::sync::atomic::Ordering::Relaxed) => 130,
            Ok(()) => 0,
        }
    });
    runtime.shutdown_background();
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_and_names_are_refused_and_concrete_addresses_taken() {
        assert_eq!(
            host("127.0.0.1").map(|a| a.to_string()),
            Ok("127.0.0.1".into())
        );
        assert_eq!(host("[::1]").map(|a| a.to_string()), Ok("::1".into()));
        for wildcard in ["0.0.0.0", "::", "[::]", "255.255.255.255", "224.0.0.1"] {
            let err = host(wildcard).err().unwrap_or_default();
            assert!(
                err.contains("wildcard addresses are refused"),
                "{wildcard}: {err}"
            );
        }
        let err = host("localhost").err().unwrap_or_default();
        assert!(err.contains("IPv4 or IPv6 literal"), "{err}");
    }
}
