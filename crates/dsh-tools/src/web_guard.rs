//! Keeping `web_fetch` away from loopback and private networks when the
//! sandbox denies commands the network: the fetch runs in the runtime,
//! outside the sandbox, so without this check a model could reach through
//! it the local services its commands cannot.
//!
//! Every address a host name resolves to is checked (a name resolving to
//! both public and private addresses keeps only the public ones), and the
//! connection goes to a checked address, so a name that changes its answer
//! between check and use (DNS rebinding) gains nothing. Literal addresses
//! in the URL and in every redirect are checked too, and proxies from the
//! environment are not used.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A resolver that answers only public addresses.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|addr| is_public(addr.ip()))
                .collect();
            if public.is_empty() {
                return Err(refusal(&host).into());
            }
            let addrs: Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

/// Refuses a URL whose host is a literal non-public address.
pub(crate) fn check_url(url: &reqwest::Url) -> Result<(), String> {
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    match literal {
        Some(ip) if !is_public(ip) => Err(refusal(&ip.to_string())),
        _ => Ok(()),
    }
}

fn refusal(host: &str) -> String {
    format!(
        "{host} is a loopback, private or link-local address, which web_fetch may not reach while the sandbox network is off"
    )
}

/// Whether `ip` is a globally routable unicast address: not loopback,
/// private (RFC 1918, unique local), link-local (including cloud metadata
/// at 169.254.169.254), shared (100.64/10), unspecified, broadcast,
/// multicast or documentation; IPv4-mapped and -compatible IPv6 addresses
/// are judged as their IPv4 address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4() {
            Some(v4) if !v6.is_loopback() => is_public_v4(v4),
            _ => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || first == 0x2001 && ip.segments()[1] == 0x0db8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(!is_public(parsed), "{ip}");
        }
        for ip in ["1.1.1.1", "8.8.8.8", "2606:4700::1111", "::ffff:1.1.1.1"] {
            let parsed: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(is_public(parsed), "{ip}");
        }
    }

    #[test]
    fn literal_hosts_are_checked() {
        let url = |s: &str| reqwest::Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert!(check_url(&url("http://127.0.0.1:8080/x")).is_err());
        assert!(check_url(&url("http://[::1]/")).is_err());
        assert!(
            check_url(&url("http://0x7f000001/")).is_err(),
            "hex form normalised"
        );
        assert!(check_url(&url("https://1.1.1.1/")).is_ok());
        assert!(check_url(&url("https://example.com/")).is_ok());
    }
}
