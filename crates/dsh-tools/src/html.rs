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

/// The readable text of an HTML document, in one pass: every byte is
/// looked at a bounded number of times (a skipped element's closing tag is
/// searched for from where the last search stopped, an entity's `;` only
/// within the longest entity), so the time is linear in the page.
pub(crate) fn to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        decode_entities_into(&rest[..open], &mut out);
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
        let name = tag_name(tag);
        if !tag.starts_with('/') && SKIPPED.iter().any(|s| s.eq_ignore_ascii_case(name)) {
            rest = after_closing_tag(rest, name);
            continue;
        }
        if BLOCKS.iter().any(|b| b.eq_ignore_ascii_case(name)) {
            out.push('\n');
        } else if name.eq_ignore_ascii_case("td") || name.eq_ignore_ascii_case("th") {
            out.push(' ');
        }
    }
    decode_entities_into(rest, &mut out);
    squeeze(&out)
}

/// The element name of a tag's inside (`/div class=x` → `div`).
fn tag_name(tag: &str) -> &str {
    let tag = tag.trim_start_matches('/');
    let end = tag
        .bytes()
        .position(|b| !b.is_ascii_alphanumeric())
        .unwrap_or(tag.len());
    &tag[..end]
}

/// What follows `</name …>` (matched without regard to case), or nothing
/// when the element is never closed.
fn after_closing_tag<'a>(rest: &'a str, name: &str) -> &'a str {
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&rest.as_bytes()[from..], b"</") {
        let start = from + at + 2;
        let candidate = rest.as_bytes().get(start..start + name.len());
        if candidate.is_some_and(|c| c.eq_ignore_ascii_case(name.as_bytes())) {
            let after = &rest[start..];
            return after.find('>').map_or("", |end| &after[end + 1..]);
        }
        from = start;
    }
    ""
}

/// Longest entity body looked at (`#x10FFFF` and the named ones fit).
const ENTITY_MAX: usize = 10;

fn decode_entities_into(text: &str, out: &mut String) {
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let window = &rest.as_bytes()[..rest.len().min(ENTITY_MAX + 1)];
        let end = memchr::memchr(b';', window);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_styles_and_tags_are_dropped_case_blind() {
        let page = "<HTML><Title>T&amp;C</Title><SCRIPT type=x>var a = '</b>';</Script >\
                    <p>One &lt;two&gt; &#x41;&#66; &bogus; &&</p><style>p{}</STYLE><td>a<td>b\
                    <!-- gone --><svg><text>no</text></svg>end";
        assert_eq!(to_text(page), "T&C\n\nOne <two> AB &bogus; &&\na bend");
    }

    #[test]
    fn unclosed_constructs_end_the_text() {
        assert_eq!(to_text("a<script>never closed"), "a");
        assert_eq!(to_text("a<!-- never closed"), "a");
        assert_eq!(to_text("a<p never closed"), "a");
    }

    #[test]
    fn a_page_of_scripts_keeps_every_text_between_them() {
        let mut page = String::new();
        for i in 0..20_000 {
            page.push_str(&format!("<script>var x{i} = 1;</script>w{i} "));
        }
        let text = to_text(&page);
        assert_eq!(text.split(' ').count(), 20_000);
        assert!(text.starts_with("w0 w1 ") && text.ends_with("w19999"));
        assert!(!text.contains("var"));
        let ampersands = "&".repeat(100_000);
        assert_eq!(to_text(&ampersands), ampersands);
    }
}
