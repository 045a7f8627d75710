use reattempt::retryable;

struct Request {
    path: String,
}

#[retryable(max_attempts = 2)]
fn fetch(id: u32, request: Request) -> Result<usize, String> {
    Ok(request.path.len() + id as usize)
}

fn main() {
    let _ = fetch(1, Request { path: "/".into() });
}
