//! What a [`RetryStream`](crate::RetryStream) does when it gives up: end with the error, or hand
//! it to a fallback that continues the stream.

use std::future::{Future, Ready};

use futures_core::Stream;

/// A stream's fallback, set by [`RetryStream::recover`](crate::RetryStream::recover): any
/// `FnOnce(E, C) -> impl Future<Output = Result<S, E>>` where `S` is a stream of the same
/// items, or [`NoRecover`]. Implemented here for those; named in bounds, not implemented
/// elsewhere.
///
/// ```
/// use std::io;
/// use reattempt::runtime::{NoRecover, RecoverStream};
///
/// fn has_fallback<R: RecoverStream<u64, u8, io::Error>>(_: R) {}
/// has_fallback(NoRecover);
/// ```
pub trait RecoverStream<C, T, E> {
    /// The fallback's future.
    type Fut: Future<Output = Result<Self::Stream, E>>;
    /// The stream that continues the consumer's.
    type Stream: Stream<Item = Result<T, E>>;

    /// The fallback's future for the error the stream gave up with and its checkpoint (that of
    /// the last item delivered); `Err(error)` back when there is no fallback.
    ///
    /// # Errors
    /// `error`, given back, when there is no fallback.
    fn recover(self, error: E, checkpoint: C) -> Result<Self::Fut, E>;
}

/// No fallback: a stream that gives up ends with its error (the default).
///
/// ```
/// use reattempt::runtime::{NoRecover, RecoverStream};
///
/// let given_back = RecoverStream::<u64, u8, &str>::recover(NoRecover, "down", 7);
/// assert_eq!(given_back.err(), Some("down"));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRecover;

/// The stream of [`NoRecover`], which is never made: it ends at once.
///
/// ```
/// use reattempt::runtime::NoStream;
///
/// fn a_stream<S: futures_util::Stream<Item = Result<u8, ()>>>() {}
/// a_stream::<NoStream<u8, ()>>();
/// ```
#[derive(Debug)]
pub struct NoStream<T, E>(std::marker::PhantomData<fn() -> (T, E)>);

impl<T, E> Stream for NoStream<T, E> {
    type Item = Result<T, E>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::task::Poll::Ready(None)
    }
}

impl<C, T, E> RecoverStream<C, T, E> for NoRecover {
    type Fut = Ready<Result<NoStream<T, E>, E>>;
    type Stream = NoStream<T, E>;

    fn recover(self, error: E, _: C) -> Result<Self::Fut, E> {
        Err(error)
    }
}

impl<C, T, E, F, Fut, S> RecoverStream<C, T, E> for F
where
    F: FnOnce(E, C) -> Fut,
    Fut: Future<Output = Result<S, E>>,
    S: Stream<Item = Result<T, E>>,
{
    type Fut = Fut;
    type Stream = S;

    fn recover(self, error: E, checkpoint: C) -> Result<Fut, E> {
        Ok(self(error, checkpoint))
    }
}
