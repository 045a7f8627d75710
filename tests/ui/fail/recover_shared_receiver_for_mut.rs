// The fallback gets the receiver the #[retryable] method has: `&mut self` here, not `&self`.
use reattempt::{recover, retryable};

#[derive(Debug)]
enum PayError {
    Unavailable,
}

struct ChargeRequest {
    order_id: String,
}

struct Receipt {
    order_id: String,
}

struct Payments {
    pending: Vec<String>,
}

impl Payments {
    #[retryable(max_attempts = 2, recover = Self::mark_pending)]
    async fn charge(&mut self, req: &ChargeRequest) -> Result<Receipt, PayError> {
        let _ = &req.order_id;
        Err(PayError::Unavailable)
    }

    #[recover]
    async fn mark_pending(&self, _err: PayError, req: &ChargeRequest) -> Result<Receipt, PayError> {
        Ok(Receipt {
            order_id: req.order_id.clone(),
        })
    }
}

fn main() {
    let mut payments = Payments { pending: Vec::new() };
    let req = ChargeRequest { order_id: "o-1".into() };
    drop(payments.charge(&req));
    let _ = (&payments.pending, Receipt { order_id: String::new() }.order_id);
}
