//! What every request must show besides the cookie: a `Host` the server
//! answers to (DNS rebinding: a page of another site that resolves its
//! name to 127.0.0.1 sends its own name), and, when the browser says
//! where the request comes from (`Origin`, `Sec-Fetch-Site`), this site.
//! There is no CORS: no other origin is ever allowed.

use hyper::HeaderMap;
use hyper::header::{HOST, ORIGIN};
use std::net::SocketAddr;

/// The authorities the server answers to.
pub struct Guard {
    authorities: Vec<String>,
}

/// Why a request was refused (the response's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `Host` is missing or not one of the server's.
    Host,
    /// `Origin` (or `Sec-Fetch-Site`) names another site.
    Origin,
}

impl Refusal {
    /// The response text.
    pub fn text(self) -> &'static str {
        match self {
            Self::Host => "forbidden: this server does not answer to that Host",
            Self::Origin => "forbidden: cross-origin requests are refused",
        }
    }
}

impl Guard {
    /// The authorities of `bound` (and `localhost` for a loopback
    /// address) and `trusted` (`host` or `host:port`). A public URL grants
    /// no trust of its own (as in the official profile): its authority is
    /// admitted by naming it in `trusted`.
    pub fn new(bound: SocketAddr, trusted: &[String]) -> Self {
        let port = bound.port();
        let mut authorities = vec![match bound {
            SocketAddr::V4(v4) => format!("{}:{port}", v4.ip()),
            SocketAddr::V6(v6) => format!("[{}]:{port}", v6.ip()),
        }];
        if bound.ip().is_loopback() {
            authorities.push(format!("localhost:{port}"));
        }
        authorities.extend(trusted.iter().map(|t| t.to_ascii_lowercase()));
        Self { authorities }
    }

    fn allowed(&self, authority: &str) -> bool {
        let authority = authority.to_ascii_lowercase();
        self.authorities.contains(&authority)
    }

    /// Checks a request's headers.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers.get(HOST).and_then(|h| h.to_str().ok());
        if !host.is_some_and(|h| self.allowed(h)) {
            return Err(Refusal::Host);
        }
        if let Some(origin) = headers.get(ORIGIN) {
            let origin = origin.to_str().ok().and_then(authority_of);
            if !origin.is_some_and(|o| self.allowed(&o)) {
                return Err(Refusal::Origin);
            }
        }
        let site = headers.get("sec-fetch-site").and_then(|s| s.to_str().ok());
        if matches!(site, Some("cross-site" | "same-site")) {
            return Err(Refusal::Origin);
        }
        Ok(())
    }
}

/// The authority of an `http://` or `https://` URL (or `Origin`).
fn authority_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty()).then(|| authority.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn only_our_host_and_origin_pass() {
        let bound: SocketAddr = "127.0.0.1:4000".parse().unwrap_or_else(|e| panic!("{e}"));
        let guard = Guard::new(bound, &["proxy.example".into(), "app.example".into()]);
        assert_eq!(guard.check(&headers(&[("host", "127.0.0.1:4000")])), Ok(()));
        assert_eq!(guard.check(&headers(&[("host", "LOCALHOST:4000")])), Ok(()));
        assert_eq!(guard.check(&headers(&[("host", "proxy.example")])), Ok(()));
        assert_eq!(guard.check(&headers(&[("host", "app.example")])), Ok(()));
        assert_eq!(
            guard.check(&headers(&[("host", "evil.example")])),
            Err(Refusal::Host)
        );
        assert_eq!(
            guard.check(&headers(&[("host", "127.0.0.1:4001")])),
            Err(Refusal::Host)
        );
        assert_eq!(guard.check(&HeaderMap::new()), Err(Refusal::Host));
        let same = headers(&[
            ("host", "127.0.0.1:4000"),
            ("origin", "http://127.0.0.1:4000"),
        ]);
        assert_eq!(guard.check(&same), Ok(()));
        let cross = headers(&[
            ("host", "127.0.0.1:4000"),
            ("origin", "http://evil.example"),
        ]);
        assert_eq!(guard.check(&cross), Err(Refusal::Origin));
        let null = headers(&[("host", "127.0.0.1:4000"), ("origin", "null")]);
        assert_eq!(guard.check(&null), Err(Refusal::Origin));
        let site = headers(&[("host", "127.0.0.1:4000"), ("sec-fetch-site", "cross-site")]);
        assert_eq!(guard.check(&site), Err(Refusal::Origin));
        let v6: SocketAddr = "[::1]:5000".parse().unwrap_or_else(|e| panic!("{e}"));
        let guard = Guard::new(v6, &[]);
        assert_eq!(guard.check(&headers(&[("host", "[::1]:5000")])), Ok(()));
    }
}
