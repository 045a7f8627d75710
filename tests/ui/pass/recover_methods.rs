#![deny(warnings, clippy::pedantic)]
//! `#[recover]` for methods (`&self`, `&mut self`, `self`), in both arities.

use reattempt::{recover, retryable};

#[derive(Debug, PartialEq)]
struct Unavailable(u32);

#[derive(Clone)]
struct Gateway {
    pending: Vec<String>,
}

impl Gateway {
    #[retryable(max_attempts = 2, delay = "10ms", recover = Self::mark_pending)]
    async fn charge(&self, order: &str, cents: u32) -> Result<String, Unavailable> {
        let _ = order;
        Err(Unavailable(cents))
    }

    #[recover]
    async fn mark_pending(
        &self,
        err: Unavailable,
        order: &str,
        _cents: u32,
    ) -> Result<String, Unavailable> {
        Ok(format!(
            "{order} pending after {err:?} ({} queued)",
            self.pending.len()
        ))
    }

    #[retryable(max_attempts = 2, delay = "10ms", recover = Self::queue)]
    async fn refund(&mut self, order: String) -> Result<String, Unavailable> {
        let _ = order;
        Err(Unavailable(0))
    }

    #[recover]
    async fn queue(&mut self, _err: Unavailable, order: String) -> Result<String, Unavailable> {
        self.pending.push(order.clone());
        Ok(order)
    }

    #[retryable(max_attempts = 2, delay = "1ms", recover = Gateway::give_up)]
    fn close(self) -> Result<usize, Unavailable> {
        Err(Unavailable(u32::try_from(self.pending.len()).unwrap_or(0)))
    }

    #[recover]
    fn give_up(self, err: Unavailable) -> Result<usize, Unavailable> {
        if self.pending.is_empty() {
            Err(err)
        } else {
            Ok(self.pending.len())
        }
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let mut gateway = Gateway {
        pending: Vec::new(),
    };
    assert_eq!(
        gateway.charge("o-1", 5).await,
        Ok("o-1 pending after Unavailable(5) (0 queued)".to_owned())
    );
    assert_eq!(gateway.refund("o-2".to_owned()).await, Ok("o-2".to_owned()));
    assert_eq!(gateway.pending, ["o-2"]);
    assert_eq!(gateway.clone().close(), Ok(1));
}
