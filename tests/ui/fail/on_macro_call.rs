use reattempt::retryable;

#[derive(Debug)]
pub struct E;

macro_rules! endpoint {
    ($name:ident) => {
        pub fn $name() -> Result<u32, E> {
            Ok(1)
        }
    };
}

#[retryable(max_attempts = 3)]
endpoint!(get_user);

fn main() {}
