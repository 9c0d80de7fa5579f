//! Durability: SIGKILL the server while clients push; every acknowledged line
//! must be there after a restart.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{proto_push_body, streams_of, TestServer};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const T0: i64 = 1_795_910_400_000_000_000;

#[test]
fn sigkill_during_ingest_loses_nothing_acknowledged() {
    let mut server = TestServer::start_with(&[
        "--max-entries-per-query",
        "1000000",
        "--memtable-bytes",
        "200000",
    ]);
    let acked: Arc<Mutex<HashSet<String>>> = Arc::new(Mutex::new(HashSet::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for c in 0..3 {
        let base = server.base.clone();
        let acked = acked.clone();
        let stop = stop.clone();
        clients.push(std::thread::spawn(move || {
            let mut batch = 0i64;
            while !stop.load(Ordering::Relaxed) {
                let lines: Vec<common::TestEntry> = (0..50)
                    .map(|i| {
                        let n = batch * 50 + i;
                        (
                            T0 + n * 1_000 + c,
                            format!("{{\"client\":{c},\"n\":{n},\"msg\":\"crash test line\"}}"),
                            vec![],
                        )
                    })
                    .collect();
                let stream = format!(
                    "{{app=\"crash\", client=\"c{c}\", shard=\"s{}\"}}",
                    batch % 4
                );
                let body = proto_push_body(&[(stream.as_str(), lines.clone())]);
                let r = ureq::post(&format!("{base}/loki/api/v1/push"))
                    .set("Content-Type", "application/x-protobuf")
                    .timeout(Duration::from_secs(5))
                    .send_bytes(&body);
                match r {
                    Ok(resp) if resp.status() == 204 => {
                        let mut a = acked.lock().unwrap();
                        for (_, l, _) in lines {
                            a.insert(l);
                        }
                    }
                    _ => break, // the server died: this batch was never acknowledged
                }
                batch += 1;
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(2500));
    server.kill9();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 500,
        "the clients pushed too little to test anything: {}",
        acked.len()
    );

    server.start_again();
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="crash"}"#),
            ("start", &T0.to_string()),
            ("end", &(T0 + 3_600_000_000_000).to_string()),
            ("limit", "1000000"),
        ],
    );
    let found: HashSet<String> = streams_of(&v)
        .into_iter()
        .flat_map(|(_, e)| e.into_iter().map(|(_, l)| l))
        .collect();
    let missing: Vec<&String> = acked.iter().filter(|l| !found.contains(*l)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged lines lost, e.g. {:?}",
        missing.len(),
        acked.len(),
        missing.first()
    );
}
