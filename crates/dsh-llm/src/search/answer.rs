//! Reading a search answer: the results of its `web_search_tool_result`
//! blocks and the citations of its text blocks.

use super::SearchError;
use serde_json::Value;

/// What one search found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchAnswer {
    /// The results, in answer order (blocks, then their items).
    pub hits: Vec<SearchHit>,
    /// The passages the answer's text cites, in answer order.
    pub citations: Vec<Citation>,
}

/// One `web_search_result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The page.
    pub url: String,
    /// Its title (may be empty).
    pub title: String,
    /// How old the page is, when the engine says (never empty).
    pub page_age: Option<String>,
}

/// One citation of a text block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    /// The page cited.
    pub url: String,
    /// The passage cited.
    pub cited_text: String,
}

/// Parses a Messages API answer. An answer without any
/// `web_search_tool_result` block is [`SearchError::NoResults`]; one whose
/// result blocks are all errors (`web_search_tool_result_error`) is
/// [`SearchError::ResultError`]. Items other than `web_search_result`,
/// results without a URL and citations without a URL or passage are
/// skipped.
pub fn parse(body: &[u8]) -> Result<SearchAnswer, SearchError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| SearchError::Unreadable(e.to_string()))?;
    let empty = Vec::new();
    let content = match value.get("content") {
        None | Some(Value::Null) => &empty,
        Some(Value::Array(blocks)) => blocks,
        Some(_) => {
            return Err(SearchError::Unreadable(
                "its \"content\" is not a list of blocks".into(),
            ));
        }
    };
    let mut answer = SearchAnswer::default();
    let mut result_blocks = 0;
    let mut error_code = None;
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("web_search_tool_result") => {
                result_blocks += 1;
                match block.get("content") {
                    Some(Value::Array(items)) => answer.hits.extend(items.iter().filter_map(hit)),
                    Some(other) => {
                        let code = other.get("error_code").and_then(Value::as_str);
                        error_code.get_or_insert_with(|| code.unwrap_or("unknown").to_owned());
                    }
                    None => {}
                }
            }
            Some("text") => {
                let citations = block.get("citations").and_then(Value::as_array);
                answer
                    .citations
                    .extend(citations.into_iter().flatten().filter_map(citation));
            }
            _ => {}
        }
    }
    match error_code {
        _ if result_blocks == 0 => Err(SearchError::NoResults),
        Some(code) if answer.hits.is_empty() => Err(SearchError::ResultError(code)),
        _ => Ok(answer),
    }
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn hit(item: &Value) -> Option<SearchHit> {
    if text(item, "type") != Some("web_search_result") {
        return None;
    }
    Some(SearchHit {
        url: text(item, "url").filter(|u| !u.is_empty())?.to_owned(),
        title: text(item, "title").unwrap_or_default().to_owned(),
        page_age: text(item, "page_age")
            .filter(|a| !a.trim().is_empty())
            .map(str::to_owned),
    })
}

fn citation(item: &Value) -> Option<Citation> {
    Some(Citation {
        url: text(item, "url").filter(|u| !u.is_empty())?.to_owned(),
        cited_text: text(item, "cited_text")
            .filter(|t| !t.trim().is_empty())?
            .to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(body: Value) -> Result<SearchAnswer, SearchError> {
        parse(body.to_string().as_bytes())
    }

    #[test]
    fn results_and_citations_are_read_in_order() {
        let answer = parsed(json!({"type": "message", "content": [
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}},
            {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [
                {"type": "web_search_result", "url": "https://a.example/", "title": "A", "encrypted_content": "x", "page_age": "2 days ago"},
                {"type": "something_else", "url": "https://skip.example/"},
                {"type": "web_search_result", "title": "no url"},
                {"type": "web_search_result", "url": "https://b.example/", "page_age": ""}
            ]},
            {"type": "text", "text": "Intro without citations."},
            {"type": "text", "text": "A says", "citations": [
                {"type": "web_search_result_location", "url": "https://a.example/", "title": "A", "cited_text": "passage a"},
                {"type": "web_search_result_location", "url": "https://a.example/", "cited_text": "  "}
            ]},
            {"type": "web_search_tool_result", "tool_use_id": "s2", "content": [
                {"type": "web_search_result", "url": "https://c.example/", "title": "C", "page_age": null}
            ]}
        ]}))
        .unwrap();
        let urls: Vec<&str> = answer.hits.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://a.example/",
                "https://b.example/",
                "https://c.example/"
            ]
        );
        assert_eq!(answer.hits[0].page_age.as_deref(), Some("2 days ago"));
        assert_eq!(answer.hits[1].title, "");
        assert_eq!(answer.hits[1].page_age, None);
        assert_eq!(
            answer.citations,
            [Citation {
                url: "https://a.example/".into(),
                cited_text: "passage a".into()
            }]
        );
    }

    #[test]
    fn an_answer_without_result_blocks_is_no_search() {
        for body in [
            json!({"content": [{"type": "text", "text": "I cannot search."}]}),
            json!({"content": []}),
            json!({"weird": true}),
        ] {
            assert_eq!(parsed(body), Err(SearchError::NoResults));
        }
        // An empty result list is a search that found nothing.
        let empty = parsed(json!({"content": [{"type": "web_search_tool_result", "content": []}]}));
        assert_eq!(empty, Ok(SearchAnswer::default()));
    }

    #[test]
    fn result_errors_and_unreadable_bodies_fail() {
        let error = json!({"type": "web_search_tool_result", "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}});
        assert_eq!(
            parsed(json!({"content": [error]})),
            Err(SearchError::ResultError("max_uses_exceeded".into()))
        );
        let hit = json!({"type": "web_search_tool_result", "content": [{"type": "web_search_result", "url": "https://a.example/"}]});
        assert_eq!(
            parsed(json!({"content": [error, hit]})).map(|a| a.hits.len()),
            Ok(1)
        );
        assert!(matches!(
            parse(b"event: message_start"),
            Err(SearchError::Unreadable(_))
        ));
        assert!(matches!(
            parsed(json!({"content": {"type": "text"}})),
            Err(SearchError::Unreadable(_))
        ));
    }
}
