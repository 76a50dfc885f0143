//! Answers of the web search endpoint: a Messages request whose `tools`
//! hold a `web_search_*` server tool gets one plain JSON message (not a
//! stream) built from the scenario's next `search` entry.

use dsh_llm::scripted::{SearchHitSpec, SearchReply, SearchTextSpec};
use serde_json::{Value, json};

/// Whether `body` is a web search request: a `tools` entry whose `type`
/// names the web search server tool.
pub fn is_search(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| {
            tools.iter().any(|t| {
                t.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|kind| kind.starts_with("web_search"))
            })
        })
}

/// The text of the request's user messages, joined by newlines (what
/// `when` is matched against).
pub fn user_text(body: &Value) -> String {
    crate::user_prompts(body).join("\n")
}

/// Picks the first unused entry whose `when` occurs in `text`, marking it
/// used; `None` when none is left.
pub fn pick(replies: &[SearchReply], used: &mut [bool], text: &str) -> Option<SearchReply> {
    let index = replies.iter().zip(used.iter()).position(|(reply, used)| {
        !*used && reply.when.as_deref().is_none_or(|when| text.contains(when))
    })?;
    used[index] = true;
    replies.get(index).cloned()
}

/// The answer a scenario without `search` entries gives: two results and
/// a text citing the first.
pub fn default_reply(text: &str) -> SearchReply {
    let topic: String = text.chars().take(60).collect();
    SearchReply {
        results: Some(vec![
            SearchHitSpec {
                url: "https://example.com/first".into(),
                title: format!("First result: {topic}"),
                page_age: Some("1 day ago".into()),
            },
            SearchHitSpec {
                url: "https://example.org/second".into(),
                title: "Second result".into(),
                page_age: None,
            },
        ]),
        blocks: vec![SearchTextSpec {
            text: "The first result covers the topic.".into(),
            citations: vec![dsh_llm::scripted::CitationSpec {
                url: "https://example.com/first".into(),
                title: Some(format!("First result: {topic}")),
                cited_text: "An overview of the topic.".into(),
            }],
        }],
        ..SearchReply::default()
    }
}

/// The JSON body of a successful answer to a request for `query` on
/// `model`, as DeepSeek's Messages API answers with web search.
pub fn body(reply: &SearchReply, query: &str, model: &str) -> Value {
    if let Some(body) = &reply.body {
        return body.clone();
    }
    let mut content = Vec::new();
    let mut searches = 0;
    if reply.results.is_some() || reply.result_error.is_some() {
        searches = 1;
        let id = "srvtoolu_fake_1";
        content.push(json!({"type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": query}}));
        let results = match (&reply.results, &reply.result_error) {
            (_, Some(code)) => {
                json!({"type": "web_search_tool_result_error", "error_code": code})
            }
            (Some(hits), None) => Value::Array(
                hits.iter()
                    .enumerate()
                    .map(|(i, hit)| {
                        json!({
                            "type": "web_search_result",
                            "url": hit.url,
                            "title": hit.title,
                            "encrypted_content": format!("ZmFrZS1lbmNyeXB0ZWQt{i}"),
                            "page_age": hit.page_age,
                        })
                    })
                    .collect(),
            ),
            (None, None) => Value::Array(Vec::new()),
        };
        content
            .push(json!({"type": "web_search_tool_result", "tool_use_id": id, "content": results}));
    }
    if let Some(text) = &reply.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for block in &reply.blocks {
        let mut text = json!({"type": "text", "text": block.text});
        if !block.citations.is_empty() {
            let citations: Vec<Value> = block
                .citations
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    json!({
                        "type": "web_search_result_location",
                        "url": c.url,
                        "title": c.title,
                        "encrypted_index": format!("ZmFrZS1pbmRleC0{i}"),
                        "cited_text": c.cited_text,
                    })
                })
                .collect();
            text["citations"] = Value::Array(citations);
        }
        content.push(text);
    }
    let output_tokens: usize = reply
        .blocks
        .iter()
        .map(|b| b.text.len())
        .chain(reply.text.as_ref().map(String::len))
        .sum::<usize>()
        .div_ceil(4);
    json!({
        "id": "msg_fake_search",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {
            "input_tokens": query.len().div_ceil(4),
            "output_tokens": output_tokens,
            "server_tool_use": {"web_search_requests": searches},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_used_once_in_order_and_matched_by_when() {
        let replies = vec![
            SearchReply {
                when: Some("beta".into()),
                text: Some("b".into()),
                ..SearchReply::default()
            },
            SearchReply {
                text: Some("any".into()),
                ..SearchReply::default()
            },
        ];
        let mut used = vec![false; 2];
        let text = |r: Option<SearchReply>| r.and_then(|r| r.text);
        assert_eq!(
            text(pick(&replies, &mut used, "alpha")).as_deref(),
            Some("any")
        );
        assert_eq!(text(pick(&replies, &mut used, "alpha")), None);
        assert_eq!(
            text(pick(&replies, &mut used, "beta")).as_deref(),
            Some("b")
        );
    }

    #[test]
    fn an_answer_has_tool_use_results_and_cited_text() {
        let body = body(&default_reply("rust"), "rust", "m");
        let kinds: Vec<&str> = body["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["type"].as_str())
            .collect();
        assert_eq!(kinds, ["server_tool_use", "web_search_tool_result", "text"]);
        assert_eq!(
            body["content"][1]["content"][0]["url"],
            "https://example.com/first"
        );
        assert_eq!(body["content"][1]["content"][1]["page_age"], Value::Null);
        assert_eq!(
            body["content"][2]["citations"][0]["type"],
            "web_search_result_location"
        );
        let bare = super::body(&SearchReply::default(), "q", "m");
        assert_eq!(bare["content"], json!([]));
    }
}
