//! Who may use the page: the token printed once at start is exchanged for
//! an `HttpOnly; SameSite=Strict` cookie valid 30 days; every other
//! request needs that cookie.

use base64::Engine;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a cookie stays valid (30 days).
pub const COOKIE_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// The token and the cookies issued for it.
pub struct Auth {
    token: String,
    cookie_name: String,
    secure: bool,
    issued: Mutex<HashMap<String, Instant>>,
}

/// 32 random bytes, base64url without padding (43 characters).
fn random() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Equal without an early exit on the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Auth {
    /// A new random token; the cookie is named for `port` (browsers share
    /// cookies across the ports of a host) and marked `Secure` over TLS.
    pub fn new(port: u16, secure: bool) -> Result<Self, getrandom::Error> {
        Ok(Self {
            token: random()?,
            cookie_name: format!("dsh-web-{port}"),
            secure,
            issued: Mutex::new(HashMap::new()),
        })
    }

    /// The token (printed once, in the URL).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// A new cookie value when `query` carries the token.
    pub fn exchange(&self, query: Option<&str>) -> Option<String> {
        let given = query?
            .split('&')
            .find_map(|pair| pair.strip_prefix("token="))?;
        if !same(given.as_bytes(), self.token.as_bytes()) {
            return None;
        }
        let value = random().ok()?;
        let mut issued = self
            .issued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        issued.retain(|_, at| at.elapsed() < COOKIE_LIFETIME);
        issued.insert(value.clone(), Instant::now());
        Some(value)
    }

    /// The `Set-Cookie` header of `value`.
    pub fn set_cookie(&self, value: &str) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{}={value}; Max-Age={}; Path=/; HttpOnly; SameSite=Strict{secure}",
            self.cookie_name,
            COOKIE_LIFETIME.as_secs()
        )
    }

    /// Whether a `Cookie` header value carries a valid cookie.
    pub fn authorized<'a>(&self, cookies: impl Iterator<Item = &'a str>) -> bool {
        let issued = self
            .issued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cookies
            .flat_map(|header| header.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == self.cookie_name)
            .any(|(_, value)| {
                issued
                    .get(value)
                    .is_some_and(|at| at.elapsed() < COOKIE_LIFETIME)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_token_buys_a_cookie_and_only_issued_cookies_pass() {
        let auth = match Auth::new(8080, false) {
            Ok(auth) => auth,
            Err(err) => panic!("{err}"),
        };
        assert_eq!(auth.token().len(), 43);
        assert_eq!(auth.exchange(Some("token=wrong")), None);
        assert_eq!(auth.exchange(None), None);
        let query = format!("a=1&token={}", auth.token());
        let Some(cookie) = auth.exchange(Some(&query)) else {
            panic!("the token was refused");
        };
        let header = auth.set_cookie(&cookie);
        assert!(header.starts_with("dsh-web-8080="));
        assert!(header.ends_with("; Max-Age=2592000; Path=/; HttpOnly; SameSite=Strict"));
        let sent = format!("other=1; dsh-web-8080={cookie}");
        assert!(auth.authorized([sent.as_str()].into_iter()));
        assert!(!auth.authorized(["dsh-web-8080=forged"].into_iter()));
        let other_port = format!("dsh-web-9090={cookie}");
        assert!(!auth.authorized([other_port.as_str()].into_iter()));
    }
}
