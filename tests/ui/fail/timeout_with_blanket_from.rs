// sqlx's shape: a blanket `impl<E: DatabaseError> From<E> for Error`. The message must be ours,
// at the key, not "`Elapsed: DatabaseError` is not satisfied".
use reattempt::retryable;

pub trait DatabaseError: std::fmt::Debug {}

#[derive(Debug)]
pub enum DbError {
    Database(Box<dyn DatabaseError>),
}

impl<E: DatabaseError + 'static> From<E> for DbError {
    fn from(e: E) -> Self {
        DbError::Database(Box::new(e))
    }
}

#[retryable(max_attempts = 2, timeout = "300ms")]
async fn insert() -> Result<u32, DbError> {
    Ok(1)
}

fn main() {
    drop(insert());
}
