//! The remote-write sender on the wire: a loopback receiver that answers
//! 503 once, then 204, sees remote-write 1.0's headers, the tenant, the
//! credentials and a snappy protobuf body, twice (the retry); and a
//! receiver that refuses out-of-order samples as Prometheus does gets every
//! sample a crash left unsent.

use prost::Message;
use runakefli_ruler::metrics::RulerMetrics;
use runakefli_ruler::remote_write::{RemoteWriter, WriteRequest};
use runakefli_ruler::sample::RecordedSample;
use runakefli_ruler::sample_log::SampleLog;
use runakefli_ruler::RemoteWriteConfig;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as received: lower-cased header lines and the body.
type Request = (Vec<String>, Vec<u8>);

fn receiver(statuses: Vec<&'static str>) -> (String, std::sync::mpsc::Receiver<Request>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/api/v1/write",
        listener.local_addr().expect("address")
    );
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for status in statuses {
            let (stream, _) = listener.accept().expect("accept");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("read");
                if line.trim().is_empty() {
                    break;
                }
                headers.push(line.trim().to_lowercase());
            }
            let len: usize = headers
                .iter()
                .find_map(|h| h.strip_prefix("content-length: "))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; len];
            reader.read_exact(&mut body).expect("body");
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            .expect("answer");
            tx.send((headers, body)).expect("send");
        }
    });
    (url, rx)
}

#[test]
fn samples_are_sent_with_the_tenant_and_credentials_and_retried() {
    let (url, requests) = receiver(vec!["503 Service Unavailable", "204 No Content"]);
    let metrics = Arc::new(RulerMetrics::default());
    let writer = RemoteWriter::start(
        RemoteWriteConfig {
            url,
            basic_auth: Some(("rk".into(), "secret".into())),
            bearer_token: None,
            queue_capacity: 100,
            log_dir: None,
        },
        metrics.clone(),
    )
    .expect("starts");
    writer.write(vec![RecordedSample {
        tenant: "team-a".into(),
        labels: vec![
            ("__name__".into(), "checkout:lines:count5m".into()),
            ("app".into(), "checkout".into()),
        ],
        t_ms: 1_700_000_000_000,
        value: 42.0,
    }]);
    let (h1, b1) = requests
        .recv_timeout(Duration::from_secs(10))
        .expect("first try");
    let (h2, b2) = requests
        .recv_timeout(Duration::from_secs(10))
        .expect("the retry");
    assert_eq!(b1, b2);
    for h in [&h1, &h2] {
        for want in [
            "content-type: application/x-protobuf",
            "content-encoding: snappy",
            "x-prometheus-remote-write-version: 0.1.0",
            "x-scope-orgid: team-a",
            // base64("rk:secret"), lower-cased with the line.
            "authorization: basic cms6c2vjcmv0",
        ] {
            assert!(h.iter().any(|l| l == want), "{want} missing in {h:?}");
        }
    }
    let raw = snap::raw::Decoder::new()
        .decompress_vec(&b2)
        .expect("snappy body");
    let req = WriteRequest::decode(raw.as_slice()).expect("protobuf body");
    assert_eq!(req.timeseries.len(), 1);
    assert_eq!(req.timeseries[0].labels[0].value, "checkout:lines:count5m");
    assert_eq!(req.timeseries[0].samples[0].value, 42.0);
    assert_eq!(req.timeseries[0].samples[0].timestamp, 1_700_000_000_000);
    writer.stop();
    assert_eq!(metrics.samples_sent.load(Ordering::Relaxed), 1);
    assert_eq!(metrics.samples_failed.load(Ordering::Relaxed), 0);
}

/// Series labels → samples `(t_ms, value)`, as a receiver stored them.
type Stored = BTreeMap<Vec<(String, String)>, Vec<(i64, f64)>>;

/// A receiver that takes samples as Prometheus' TSDB does: a request is
/// applied whole or not at all, and refused with 400 when one of its
/// samples is older than its series' newest (out of order) or has that
/// newest time with another value; the newest time with the same value is
/// taken silently (a duplicate). Answers `requests` requests.
fn prometheus_like(requests: usize) -> (String, Arc<Mutex<Stored>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/api/v1/write",
        listener.local_addr().expect("address")
    );
    let stored = Arc::new(Mutex::new(Stored::new()));
    let db = stored.clone();
    std::thread::spawn(move || {
        for _ in 0..requests {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut len = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("read");
                if line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_lowercase().strip_prefix("content-length: ") {
                    len = v.trim().parse().expect("length");
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).expect("body");
            let raw = snap::raw::Decoder::new()
                .decompress_vec(&body)
                .expect("snappy");
            let req = WriteRequest::decode(raw.as_slice()).expect("protobuf");
            let mut db = db.lock().expect("lock");
            let mut next = db.clone();
            let mut ok = true;
            for ts in req.timeseries {
                let key: Vec<(String, String)> =
                    ts.labels.into_iter().map(|l| (l.name, l.value)).collect();
                let series = next.entry(key).or_default();
                for s in ts.samples {
                    match series.last() {
                        Some(&(t, _)) if s.timestamp < t => ok = false,
                        Some(&(t, v)) if s.timestamp == t => ok &= v == s.value,
                        _ => series.push((s.timestamp, s.value)),
                    }
                }
            }
            let status = if ok {
                *db = next;
                "204 No Content"
            } else {
                "400 Bad Request"
            };
            drop(db);
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (url, stored)
}

fn at(t_ms: i64, value: f64) -> RecordedSample {
    RecordedSample {
        tenant: "fake".into(),
        labels: vec![("__name__".into(), "x:count".into())],
        t_ms,
        value,
    }
}

#[test]
fn a_batch_sent_again_after_a_crash_loses_none_of_the_unsent_samples() {
    // The log a crash leaves: samples at 10 s and 11 s that the receiver
    // had already taken (the crash came before the log learnt it) and one
    // at 12 s it never got. Sent as one request, the 10 s sample is out of
    // order and Prometheus refuses the request whole, 12 s with it.
    let (url, stored) = prometheus_like(10);
    let tmp = tempfile::tempdir().expect("tempdir");
    {
        let (mut log, _) = SampleLog::open(tmp.path()).expect("log");
        log.append(vec![at(10_000, 1.0), at(11_000, 2.0), at(12_000, 3.0)])
            .1
            .expect("logged");
    }
    let key = vec![("__name__".to_string(), "x:count".to_string())];
    stored
        .lock()
        .expect("lock")
        .insert(key.clone(), vec![(10_000, 1.0), (11_000, 2.0)]);
    let metrics = Arc::new(RulerMetrics::default());
    let writer = RemoteWriter::start(
        RemoteWriteConfig {
            url,
            basic_auth: None,
            bearer_token: None,
            queue_capacity: 100,
            log_dir: Some(tmp.path().to_path_buf()),
        },
        metrics.clone(),
    )
    .expect("starts");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while stored.lock().expect("lock")[&key].len() < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    writer.stop();
    assert_eq!(
        stored.lock().expect("lock")[&key],
        [(10_000, 1.0), (11_000, 2.0), (12_000, 3.0)]
    );
    // The 10 s sample alone was refused (it is stored already); 11 s was a
    // duplicate Prometheus takes, 12 s new.
    assert_eq!(metrics.samples_failed.load(Ordering::Relaxed), 1);
    assert_eq!(metrics.samples_sent.load(Ordering::Relaxed), 2);
    // Everything was delivered: nothing is left to send after a restart.
    assert!(SampleLog::open(tmp.path()).expect("log").1.is_empty());
}
