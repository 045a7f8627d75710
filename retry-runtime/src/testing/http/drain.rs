//! Waiting, before a scripted reset, until what the connection wrote has left its socket: a TCP
//! RST throws away what the kernel still holds to send, so without this wait the client would
//! lose the last bytes written before the reset, and a test could not count what it re-fetched.

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use super::kill::Kill;

/// How often the socket is looked at.
const STEP: Duration = Duration::from_millis(5);
/// A client that does not read for this long is reset all the same.
const LIMIT: Duration = Duration::from_secs(10);
/// Without `/proc/net/tcp` (not Linux): how long the connection must have written nothing.
const QUIET: u32 = 40;

/// Resolves once the connection has written nothing for two looks in a row and its socket holds
/// nothing unsent or unacknowledged (read from `/proc/net/tcp` on Linux; elsewhere, once it has
/// written nothing for 200 ms), or after [`LIMIT`].
pub(super) async fn drained(kill: &Kill) {
    let deadline = tokio::time::Instant::now() + LIMIT;
    let mut last = kill.written.load(SeqCst);
    let mut quiet = 0_u32;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(STEP).await;
        let now = kill.written.load(SeqCst);
        quiet = if now == last { quiet + 1 } else { 0 };
        last = now;
        let settled = match kill.ports.and_then(|(local, peer)| queued(local, peer)) {
            Some(queued) => queued == 0 && quiet >= 2,
            None => quiet >= QUIET,
        };
        if settled {
            return;
        }
    }
}

/// The bytes the socket from `local` to `peer` (ports) still holds to send or to see
/// acknowledged: `tx_queue` in `/proc/net/tcp` (or `tcp6`); `None` when it cannot be read.
fn queued(local: u16, peer: u16) -> Option<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|path| {
        let table = std::fs::read_to_string(path).ok()?;
        table.lines().skip(1).find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let port = |field: &str| {
                let (_, port) = field.rsplit_once(':')?;
                u16::from_str_radix(port, 16).ok()
            };
            if port(fields.get(1)?)? != local || port(fields.get(2)?)? != peer {
                return None;
            }
            let (tx, _rx) = fields.get(4)?.split_once(':')?;
            u64::from_str_radix(tx, 16).ok()
        })
    })
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_socket_with_nothing_to_send_reads_zero_on_linux() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, peer) = listener.accept().await.unwrap();
        let queued = super::queued(server.local_addr().unwrap().port(), peer.port());
        if cfg!(target_os = "linux") {
            assert_eq!(queued, Some(0));
        }
        drop(client);
    }
}
