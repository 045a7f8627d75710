use reattempt::{Bulkhead, retryable};

#[retryable(bulkhead = &Bulkhead::builder().max_concurrent(10).build().unwrap())]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
