//! The remote-write sender on the wire: a loopback receiver that answers
//! 503 once, then 204, sees remote-write 1.0's headers, the tenant, the
//! credentials and a snappy protobuf body, twice (the retry).

use prost::Message;
use runakefli_ruler::metrics::RulerMetrics;
use runakefli_ruler::remote_write::{RemoteWriter, WriteRequest};
use runakefli_ruler::sample::RecordedSample;
use runakefli_ruler::RemoteWriteConfig;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::mpsc::channel;
use std::sync::Arc;
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
