//! The concurrent-query limit over HTTP, deterministically: the test holds
//! the only query slot itself, so a read request is answered 429 at once
//! (no queue), pushes are not held back, and the slot's release lets reads
//! through again.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_server::{router, AppState, ServerConfig};
use std::time::Duration;

fn get(url: &str) -> (u16, String) {
    match ureq::get(url).timeout(Duration::from_secs(10)).call() {
        Ok(r) => (r.status(), r.into_string().unwrap()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap()),
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_query_gate_answers_429_and_pushes_still_pass() {
    let dir = tempfile::tempdir().unwrap();
    let config = ServerConfig {
        data_dir: dir.path().join("data"),
        max_concurrent_queries: 1,
        max_queued_queries: 0,
        ..ServerConfig::default()
    };
    let state = tokio::task::spawn_blocking(move || AppState::open(config))
        .await
        .unwrap()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = router(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let slot = state.query_gate.enter().await.unwrap();
    let b = base.clone();
    let (status, body) =
        tokio::task::spawn_blocking(move || get(&format!("{b}/loki/api/v1/labels")))
            .await
            .unwrap();
    assert_eq!(
        (status, body.as_str()),
        (429, "too many outstanding requests\n")
    );
    let b = base.clone();
    let push = tokio::task::spawn_blocking(move || {
        ureq::post(&format!("{b}/loki/api/v1/push"))
            .set("Content-Type", "application/json")
            .send_string(
                r#"{"streams":[{"stream":{"app":"a"},"values":[["1795910400000000000","x"]]}]}"#,
            )
            .map(|r| r.status())
            .unwrap_or_else(|e| panic!("{e}"))
    })
    .await
    .unwrap();
    assert_eq!(push, 204, "pushes do not wait for query slots");

    drop(slot);
    let b = base.clone();
    let (status, body) =
        tokio::task::spawn_blocking(move || get(&format!("{b}/loki/api/v1/labels")))
            .await
            .unwrap();
    assert_eq!(status, 200, "{body}");
}
