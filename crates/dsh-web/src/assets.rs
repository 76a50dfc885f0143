//! The page: plain ES modules, a style sheet and one HTML file, embedded
//! in the executable (no build step, nothing fetched from elsewhere).

/// `(name, content type, body)` of every embedded file.
const FILES: &[(&str, &str, &str)] = &[
    ("index.html", HTML, include_str!("../assets/index.html")),
    ("app.js", JS, include_str!("../assets/app.js")),
    ("api.js", JS, include_str!("../assets/api.js")),
    ("dom.js", JS, include_str!("../assets/dom.js")),
    ("render.js", JS, include_str!("../assets/render.js")),
    ("style.css", CSS, include_str!("../assets/style.css")),
];

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// The content type and body of the file `name` (`index.html`, `app.js`).
pub fn get(name: &str) -> Option<(&'static str, &'static str)> {
    FILES
        .iter()
        .find(|(file, _, _)| *file == name)
        .map(|(_, kind, body)| (*kind, *body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_its_modules_are_embedded() {
        let (kind, html) = get("index.html").unwrap_or_default();
        assert!(kind.starts_with("text/html") && html.contains("app.js"));
        for (name, _, body) in FILES {
            assert!(!body.is_empty(), "{name}");
            // The CSP allows no inline script.
            assert!(!body.contains("<script>"), "{name}");
        }
        assert_eq!(get("../Cargo.toml"), None);
    }
}
