//! Syslog over UDP: one message per datagram (RFC 5426).

use super::batch::Batch;
use super::{LINGER, MAX_BATCH};
use crate::state::AppState;
use std::sync::Arc;
use tokio::net::UdpSocket;
use tokio::time::{sleep_until, Instant};

/// Receives datagrams forever.
pub(super) async fn serve(socket: UdpSocket, state: Arc<AppState>) {
    let mut buf = vec![0u8; 65_536];
    let mut batch = Batch::default();
    let mut deadline: Option<Instant> = None;
    loop {
        let received = match deadline {
            Some(d) => tokio::select! {
                r = socket.recv_from(&mut buf) => Some(r),
                _ = sleep_until(d) => None,
            },
            None => Some(socket.recv_from(&mut buf).await),
        };
        match received {
            None => {
                batch.flush(&state).await;
                deadline = None;
            }
            Some(Ok((n, peer))) => {
                if !batch.admit(n, false, &state).await {
                    continue;
                }
                batch.add(&buf[..n], &state, &peer.to_string());
                if batch.len() >= MAX_BATCH {
                    batch.flush(&state).await;
                    deadline = None;
                } else if batch.len() > 0 && deadline.is_none() {
                    deadline = Some(Instant::now() + LINGER);
                }
            }
            Some(Err(e)) => tracing::debug!(error = %e, "syslog udp receive failed"),
        }
    }
}
