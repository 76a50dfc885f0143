//! Scripted answers of the web search endpoint, played by the fake model
//! server (`dsh-fake-model`) to `web_search` requests.
//!
//! ```yaml
//! search:
//!   - when: "tokio"                      # a substring of the request's user text (optional)
//!     results:                           # a web_search_tool_result block
//!       - {url: "https://tokio.rs", title: "Tokio", page_age: "2 days ago"}
//!     text: "Tokio is an async runtime." # a text block without citations
//!     blocks:                            # text blocks with citations, after `text`
//!       - text: "It schedules tasks."
//!         citations: [{url: "https://tokio.rs", title: "Tokio", cited_text: "A runtime"}]
//!   - error: {code: SERVER, message: "busy", status: 503}   # an HTTP error
//!   - body: {"content": []}              # the answer's JSON body, verbatim
//!   - when: "alpha"
//!     after: "delta"                     # answer once a request for "delta" has arrived
//!     results: []
//! ```
//!
//! Each request takes the first entry not used yet whose `when` occurs in
//! its user text (an entry without `when` matches any request). Without
//! `results` the answer has no result block.

use super::failure::ScriptedError;
use serde::Deserialize;
use serde_json::Value;

/// One scripted answer of the search endpoint.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchReply {
    /// A substring of the request's user text; `None` matches any request.
    #[serde(default)]
    pub when: Option<String>,
    /// The results of a `web_search_tool_result` block (preceded by its
    /// `server_tool_use`); `None`: the answer has no such block.
    #[serde(default)]
    pub results: Option<Vec<SearchHitSpec>>,
    /// A `web_search_tool_result` whose content is an error with this
    /// `error_code` (instead of `results`).
    #[serde(default)]
    pub result_error: Option<String>,
    /// A text block without citations (before `blocks`).
    #[serde(default)]
    pub text: Option<String>,
    /// Text blocks, each with its citations.
    #[serde(default)]
    pub blocks: Vec<SearchTextSpec>,
    /// Fail with this HTTP error instead of answering.
    #[serde(default)]
    pub error: Option<ScriptedError>,
    /// The answer's body, verbatim (any JSON), instead of one built from
    /// the fields above.
    #[serde(default)]
    pub body: Option<Value>,
    /// Wait this long before answering.
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// Answer only once a search request whose user text contains this
    /// has arrived (at most 10 s later, else HTTP 500): proves that
    /// requests are in flight together without timing them.
    #[serde(default)]
    pub after: Option<String>,
}

/// One `web_search_result`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchHitSpec {
    /// The page.
    pub url: String,
    /// Its title.
    pub title: String,
    /// How old the page is, as the search engine says (`"2 days ago"`).
    #[serde(default)]
    pub page_age: Option<String>,
}

/// One text block of a search answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchTextSpec {
    /// The text.
    pub text: String,
    /// Its `web_search_result_location` citations.
    #[serde(default)]
    pub citations: Vec<CitationSpec>,
}

/// One `web_search_result_location` citation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CitationSpec {
    /// The cited page.
    pub url: String,
    /// Its title.
    #[serde(default)]
    pub title: Option<String>,
    /// The passage cited.
    #[serde(default)]
    pub cited_text: String,
}

/// Checks the scripted search answers; the message names the entry.
pub(super) fn check(replies: &[SearchReply]) -> Result<(), String> {
    for (i, reply) in replies.iter().enumerate() {
        let content = reply.results.is_some()
            || reply.result_error.is_some()
            || reply.text.is_some()
            || !reply.blocks.is_empty();
        let kinds = [content, reply.error.is_some(), reply.body.is_some()];
        if kinds.iter().filter(|k| **k).count() > 1 {
            return Err(format!(
                "search[{i}] must have one of content (results, text, blocks), an error or a body"
            ));
        }
        if reply.results.is_some() && reply.result_error.is_some() {
            return Err(format!(
                "search[{i}] cannot have both results and result_error"
            ));
        }
        if reply.when.as_deref() == Some("") || reply.after.as_deref() == Some("") {
            return Err(format!("search[{i}] has an empty `when` or `after`"));
        }
    }
    Ok(())
}
