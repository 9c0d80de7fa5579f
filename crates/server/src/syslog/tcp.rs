//! Syslog over TCP: one task per connection, framing by RFC 6587.

use super::batch::Batch;
use super::{max_frame, LINGER, MAX_BATCH};
use crate::state::AppState;
use runakefli_ingest::syslog::framing::Framer;
use std::sync::Arc;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{sleep_until, Instant};

/// Accepts connections forever.
pub(super) async fn serve(listener: TcpListener, state: Arc<AppState>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                tokio::spawn(connection(stream, peer.to_string(), state.clone()));
            }
            Err(e) => {
                tracing::warn!(error = %e, "syslog tcp accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

async fn connection(mut stream: TcpStream, peer: String, state: Arc<AppState>) {
    let mut framer = Framer::new(max_frame(&state));
    let mut batch = Batch::default();
    let mut buf = vec![0u8; 64 << 10];
    let mut deadline: Option<Instant> = None;
    loop {
        let read = match deadline {
            Some(d) => tokio::select! {
                r = stream.read(&mut buf) => Some(r),
                _ = sleep_until(d) => None,
            },
            None => Some(stream.read(&mut buf).await),
        };
        match read {
            None => {
                batch.flush(&state).await;
                deadline = None;
            }
            Some(Ok(0)) => {
                if let Some(last) = framer.finish() {
                    batch.admit(last.len(), true, &state).await;
                    batch.add(&last, &state, &peer);
                }
                break;
            }
            Some(Ok(n)) => {
                framer.push(&buf[..n]);
                loop {
                    match framer.next_frame() {
                        Ok(Some(frame)) => {
                            batch.admit(frame.len(), true, &state).await;
                            batch.add(&frame, &state, &peer)
                        }
                        Ok(None) => break,
                        Err(e) => {
                            tracing::warn!(peer, error = %e, "syslog tcp connection closed");
                            batch.flush(&state).await;
                            return;
                        }
                    }
                    if batch.len() >= MAX_BATCH {
                        batch.flush(&state).await;
                        deadline = None;
                    }
                }
                if batch.len() > 0 && deadline.is_none() {
                    deadline = Some(Instant::now() + LINGER);
                }
            }
            Some(Err(e)) => {
                tracing::debug!(peer, error = %e, "syslog tcp read failed");
                break;
            }
        }
    }
    batch.flush(&state).await;
}
