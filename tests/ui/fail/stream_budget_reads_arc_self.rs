//! `self: Arc<Self>` is taken by value too: a key beside `resume` cannot borrow it.
use std::sync::Arc;

use futures_util::Stream;
use reattempt::{RetryBudget, retryable};

struct Client {
    budget: RetryBudget,
}

impl Client {
    #[retryable(budget = self.budget, resume = |offset, _n: &u64| *offset += 1)]
    async fn lines(self: Arc<Self>, offset: u64) -> Result<impl Stream<Item = Result<u64, String>>, String> {
        let _ = &self.budget;
        Ok(futures_util::stream::iter((offset..3).map(Ok)))
    }
}

fn main() {}
