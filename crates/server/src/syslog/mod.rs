//! Syslog listeners (off by default): RFC 5424 and RFC 3164 messages over
//! TCP (octet-counted or newline framing, RFC 6587) and UDP (one message per
//! datagram), parsed and mapped by [`runakefli_ingest::syslog`].
//!
//! Syslog has no acknowledgements, so durability is "as soon as possible":
//! each TCP connection (and the UDP socket) batches its messages and appends
//! the batch to the fsynced WAL when it holds [`MAX_BATCH`] messages, when
//! [`LINGER`] has passed since its first message, or when the connection
//! ends. Messages that fail to parse or break a limit are dropped with a
//! warning; a broken TCP framing closes the connection. All data goes to the
//! single default tenant.

mod batch;
mod tcp;
mod udp;

use crate::state::AppState;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Most messages held before a batch is appended.
pub const MAX_BATCH: usize = 2048;
/// Longest time a message waits in a batch.
pub const LINGER: Duration = Duration::from_millis(100);

/// Bound syslog sockets, ready to serve.
pub struct SyslogListeners {
    tcp: Option<tokio::net::TcpListener>,
    udp: Option<tokio::net::UdpSocket>,
}

impl SyslogListeners {
    /// Binds the configured listeners (none when neither address is set).
    pub async fn bind(
        tcp: Option<SocketAddr>,
        udp: Option<SocketAddr>,
    ) -> std::io::Result<SyslogListeners> {
        let tcp = match tcp {
            Some(a) => Some(tokio::net::TcpListener::bind(a).await?),
            None => None,
        };
        let udp = match udp {
            Some(a) => Some(tokio::net::UdpSocket::bind(a).await?),
            None => None,
        };
        Ok(SyslogListeners { tcp, udp })
    }

    /// The bound TCP address, if any.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The bound UDP address, if any.
    pub fn udp_addr(&self) -> Option<SocketAddr> {
        self.udp.as_ref().and_then(|s| s.local_addr().ok())
    }

    /// Serves the bound listeners on background tasks.
    pub fn spawn(self, state: Arc<AppState>) {
        if let Some(l) = self.tcp {
            tracing::info!(address = ?l.local_addr().ok(), "syslog tcp listening");
            tokio::spawn(tcp::serve(l, state.clone()));
        }
        if let Some(s) = self.udp {
            tracing::info!(address = ?s.local_addr().ok(), "syslog udp listening");
            tokio::spawn(udp::serve(s, state));
        }
    }
}

/// The largest syslog frame accepted: the longest line plus room for a header.
pub(crate) fn max_frame(state: &AppState) -> usize {
    let line = if state.push_limits.max_line_bytes == 0 {
        1 << 20
    } else {
        state.push_limits.max_line_bytes
    };
    line + 8192
}
