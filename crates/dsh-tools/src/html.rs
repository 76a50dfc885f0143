//! Crude HTML-to-text conversion for `web_fetch`: drops scripts, styles
//! and tags, turns block elements into line breaks, decodes the common
//! entities and squeezes blank lines. No layout, tables or link targets.

/// Elements whose content is dropped entirely.
const SKIPPED: [&str; 5] = ["script", "style", "noscript", "template", "svg"];

/// Elements that start a new line.
const BLOCKS: [&str; 24] = [
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "pre",
    "blockquote",
    "hr",
    "title",
    "main",
];

/// Whether `body` looks like an HTML document.
pub(crate) fn looks_like_html(content_type: &str, body: &str) -> bool {
    if content_type.contains("html") {
        return true;
    }
    let start: String = body
        .trim_start()
        .chars()
        .take(64)
        .collect::<String>()
        .to_ascii_lowercase();
    start.starts_with("<!doctype html") || start.starts_with("<html")
}

/// The readable text of an HTML document.
pub(crate) fn to_text(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&decode_entities(&rest[..open]));
        rest = &rest[open..];
        if rest.starts_with("<!--") {
            rest = rest.find("-->").map_or("", |end| &rest[end + 3..]);
            continue;
        }
        let Some(close) = rest.find('>') else {
            rest = "";
            break;
        };
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if !tag.starts_with('/') && SKIPPED.contains(&name.as_str()) {
            let closing = format!("</{name}");
            let lower = rest.to_ascii_lowercase();
            rest = match lower.find(&closing) {
                Some(at) => {
                    let after = &rest[at..];
                    after.find('>').map_or("", |end| &after[end + 1..])
                }
                None => "",
            };
            continue;
        }
        if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
        } else if name == "td" || name == "th" {
            out.push(' ');
        }
    }
    out.push_str(&decode_entities(rest));
    squeeze(&out)
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let end = rest.find(';').filter(|end| *end <= 10);
        let decoded = end.and_then(|end| entity(&rest[1..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

/// Trims each line, collapses runs of spaces and keeps at most one blank
/// line in a row.
fn squeeze(text: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() && lines.last().is_none_or(|last| last.is_empty()) {
            continue;
        }
        lines.push(line);
    }
    while lines.last().is_some_and(|last| last.is_empty()) {
        lines.pop();
    }
    lines.join("\n")
}
