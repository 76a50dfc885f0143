//! The web search client against the fake model server: the answer read,
//! retries under the chat policy, the answer-size bound and the errors.

use dsh_fake_model::FakeServer;
use dsh_llm::RetryPolicy;
use dsh_llm::scripted::Scenario;
use dsh_llm::search::{SearchClient, SearchConfig, SearchError};
use serde_json::Value;

fn scenario(yaml: &str) -> Scenario {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "dsh-fake-search-{}-{}.yaml",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::write(&path, yaml).unwrap_or_else(|e| panic!("{e}"));
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_file(path);
    scenario
}

async fn serve(search: &str) -> FakeServer {
    let yaml = format!("replies: []\nsearch:\n{search}");
    FakeServer::start(scenario(&yaml), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn client(server: &FakeServer, max_bytes: u64) -> SearchClient {
    let mut config = SearchConfig::new(Some("sk-search".into()));
    config.base_url = server.base_url();
    config.max_bytes = max_bytes;
    config.retry = RetryPolicy {
        initial_ms: 5,
        cap_ms: 20,
        ..RetryPolicy::default()
    };
    SearchClient::new(config).unwrap_or_else(|e| panic!("{e}"))
}

fn searches(server: &FakeServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r["path"] == "/messages")
        .collect()
}

#[tokio::test]
async fn a_retryable_error_is_retried_and_the_answer_read() {
    let server = serve(
        "  - error: {code: SERVER, message: busy, status: 502}\n  - results: [{url: \"https://a.example/\", title: A, page_age: \"1 day ago\"}]\n    blocks: [{text: t, citations: [{url: \"https://a.example/\", cited_text: cited}]}]\n",
    )
    .await;
    let search = client(&server, 1 << 20);
    let answer = search
        .search(&search.request_body("q"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer.hits.len(), 1);
    assert_eq!(answer.hits[0].page_age.as_deref(), Some("1 day ago"));
    assert_eq!(answer.citations[0].cited_text, "cited");
    let sent = searches(&server);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["body"], sent[1]["body"]);
    assert_eq!(sent[0]["headers"]["authorization"], "<redacted len=16>");
}

#[tokio::test]
async fn refusals_and_unusable_answers_are_not_retried() {
    let server = serve(
        "  - when: refused\n    error: {code: AUTH, message: nope, status: 403}\n  - when: plain\n    text: no search\n  - when: big\n    results: [{url: \"https://big.example/\", title: \"a very long title that does not fit the tiny bound\"}]\n",
    )
    .await;
    let search = client(&server, 1 << 20);
    let refused = search.search(&search.request_body("refused")).await;
    assert!(
        matches!(&refused, Err(SearchError::Http(f)) if f.status == Some(403) && f.message == "nope"),
        "{refused:?}"
    );
    let plain = search.search(&search.request_body("plain")).await;
    assert_eq!(plain, Err(SearchError::NoResults));
    // A whole answer is a few hundred bytes.
    let small = client(&server, 100);
    let big = small.search(&small.request_body("big")).await;
    assert_eq!(big, Err(SearchError::TooLarge { limit: 100 }));
    assert_eq!(searches(&server).len(), 3);
}

#[tokio::test]
async fn retries_stop_with_the_policy() {
    let entries = "  - error: {code: SERVER, message: down, status: 500}\n".repeat(8);
    let server = serve(&entries).await;
    let search = client(&server, 1 << 20);
    let failed = search.search(&search.request_body("q")).await;
    assert!(matches!(failed, Err(SearchError::Http(_))), "{failed:?}");
    assert_eq!(searches(&server).len(), 6); // the attempt and 5 retries
}
