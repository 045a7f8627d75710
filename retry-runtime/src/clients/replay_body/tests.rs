//! The replayable body's unit tests: clones replay the same bytes, the cap commits the call to
//! the clone that holds the body, and waiting clones are woken.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame};

use http_body_util::{BodyExt, Full, StreamBody};
use proptest::prelude::*;
use tokio::sync::mpsc;

use super::error::BoxError;
use super::{BodyNotReplayable, DEFAULT_REPLAY_CAP, ReplayBody};

/// A body of the given chunks, of unknown size, ending with `trailers` if any.
struct Chunks {
    chunks: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
}

fn chunks(sizes: &[usize]) -> (Chunks, Vec<u8>) {
    let mut all = Vec::new();
    let mut chunks = VecDeque::new();
    for (i, &n) in sizes.iter().enumerate() {
        let chunk: Vec<u8> = (0..n)
            .map(|j| u8::try_from((i * 31 + j) % 256).unwrap())
            .collect();
        all.extend_from_slice(&chunk);
        chunks.push_back(Bytes::from(chunk));
    }
    (
        Chunks {
            chunks,
            trailers: None,
        },
        all,
    )
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }
}

/// A body fed through a channel: `Pending` until the test sends the next chunk.
fn channel() -> (
    mpsc::UnboundedSender<Bytes>,
    impl Body<Data = Bytes, Error = std::io::Error> + Send + Unpin,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
    let stream = futures_stream(move |cx| rx.poll_recv(cx).map(|c| c.map(|c| Ok(Frame::data(c)))));
    (tx, StreamBody::new(stream))
}

struct PollFnStream<F>(F);
impl<F, T> futures_core::Stream for PollFnStream<F>
where
    F: FnMut(&mut Context<'_>) -> Poll<Option<T>> + Unpin,
{
    type Item = T;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        (self.0)(cx)
    }
}
fn futures_stream<F, T>(f: F) -> PollFnStream<F>
where
    F: FnMut(&mut Context<'_>) -> Poll<Option<T>> + Unpin,
{
    PollFnStream(f)
}

async fn collect<B>(body: ReplayBody<B>) -> Result<(Vec<u8>, Option<HeaderMap>), BoxError>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let collected = body.collect().await?;
    let trailers = collected.trailers().cloned();
    Ok((collected.to_bytes().to_vec(), trailers))
}

fn is_not_replayable(error: &BoxError) -> bool {
    error.downcast_ref::<BodyNotReplayable>().is_some()
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn send_and_sync_over_a_send_body() {
    struct SendOnly(std::cell::Cell<u8>);
    impl Body for SendOnly {
        type Data = Bytes;
        type Error = std::io::Error;
        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            Poll::Ready(None)
        }
    }
    assert_send_sync::<ReplayBody<SendOnly>>();
    let _ = SendOnly(std::cell::Cell::new(0)).0.get();
}

#[tokio::test]
async fn clones_replay_identical_bytes() {
    let (body, all) = chunks(&[3, 0, 7, 1]);
    let body = ReplayBody::new(body, DEFAULT_REPLAY_CAP);
    for _ in 0..3 {
        assert_eq!(collect(body.clone()).await.unwrap().0, all);
    }
    assert!(!body.is_capped());
    assert_eq!(body.recorded(), all.len());
}

#[tokio::test]
async fn cap_exactly_at_the_total_is_replayable() {
    let (body, all) = chunks(&[4, 4, 2]);
    let body = ReplayBody::new(body, 10);
    assert_eq!(collect(body.clone()).await.unwrap().0, all);
    assert_eq!(collect(body.clone()).await.unwrap().0, all);
    assert!(!body.is_capped());
}

#[tokio::test]
async fn one_byte_under_the_total_is_capped_and_freed() {
    let (body, all) = chunks(&[4, 4, 2]);
    let body = ReplayBody::new(body, 9);
    assert_eq!(collect(body.clone()).await.unwrap().0, all, "sent once");
    assert!(body.is_capped());
    assert_eq!(body.recorded(), 0, "the recording is freed");
    let error = collect(body.clone()).await.unwrap_err();
    assert!(is_not_replayable(&error), "{error}");
}

#[tokio::test]
async fn a_size_hint_above_the_cap_caps_from_the_start() {
    let body = ReplayBody::new(Full::new(Bytes::from(vec![5; 100])), 99);
    assert!(body.is_capped());
    let copy = body.clone();
    assert_eq!(copy.size_hint().exact(), Some(100));
    assert_eq!(collect(copy).await.unwrap().0, vec![5; 100]);
    assert_eq!(body.recorded(), 0);
    assert!(collect(body.clone()).await.is_err());

    let fits = ReplayBody::new(Full::new(Bytes::from(vec![5; 100])), 100);
    assert!(!fits.is_capped());
}

#[tokio::test]
async fn trailers_are_replayed() {
    let (mut body, all) = chunks(&[2, 2]);
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", "0".parse().unwrap());
    body.trailers = Some(trailers.clone());
    let body = ReplayBody::new(body, DEFAULT_REPLAY_CAP);
    for _ in 0..2 {
        let (bytes, got) = collect(body.clone()).await.unwrap();
        assert_eq!(bytes, all);
        assert_eq!(got.as_ref(), Some(&trailers));
    }
}

#[tokio::test]
async fn size_hint_and_end_of_stream_per_clone() {
    let body = ReplayBody::new(Full::new(Bytes::from_static(b"hello")), 64);
    let mut first = body.clone();
    assert_eq!(first.size_hint().exact(), Some(5));
    assert!(!first.is_end_stream());
    let frame = poll_fn(|cx| Pin::new(&mut first).poll_frame(cx)).await;
    assert_eq!(frame.unwrap().unwrap().into_data().unwrap(), "hello");
    assert_eq!(first.size_hint().exact(), Some(0));
    let second = body.clone();
    assert_eq!(second.size_hint().exact(), Some(5));
    assert!(!second.is_end_stream());
    assert!(first.is_end_stream(), "Full is at its end");

    let empty = ReplayBody::new(http_body_util::Empty::<Bytes>::new(), 64);
    assert!(empty.is_end_stream());
    assert_eq!(empty.size_hint().exact(), Some(0));
}

#[tokio::test]
async fn a_clone_made_after_the_whole_body_replays_it_alone() {
    let (body, all) = chunks(&[1, 2, 3]);
    let body = ReplayBody::new(body, DEFAULT_REPLAY_CAP);
    assert_eq!(collect(body.clone()).await.unwrap().0, all);
    assert!(body.inner_is_gone(), "the inner body is gone");
    let late = body.clone();
    assert_eq!(late.size_hint().exact(), Some(all.len() as u64));
    assert_eq!(collect(late).await.unwrap().0, all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clones_both_complete() {
    for _ in 0..50 {
        let (tx, inner) = channel();
        let body = ReplayBody::new(inner, DEFAULT_REPLAY_CAP);
        let a = tokio::spawn(collect(body.clone()));
        let b = tokio::spawn(collect(body.clone()));
        let mut all = Vec::new();
        for i in 0..20u8 {
            let chunk = vec![i; usize::from(i) + 1];
            all.extend_from_slice(&chunk);
            tx.send(Bytes::from(chunk)).unwrap();
            tokio::task::yield_now().await;
        }
        drop(tx);
        let (a, b) = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            (a.await.unwrap().unwrap().0, b.await.unwrap().unwrap().0)
        })
        .await
        .expect("a clone was never woken");
        assert_eq!(a, all);
        assert_eq!(b, all);
    }
}

/// Polls `body` once with a waker that does nothing.
fn poll_noop<B>(body: &mut ReplayBody<B>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut cx = Context::from_waker(Waker::noop());
    Pin::new(body).poll_frame(&mut cx)
}

/// A task waiting on `clone` for its next chunk.
fn wait_for_chunk<B>(mut clone: ReplayBody<B>) -> tokio::task::JoinHandle<Bytes>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    tokio::spawn(async move {
        let frame = poll_fn(|cx| Pin::new(&mut clone).poll_frame(cx)).await;
        frame.unwrap().unwrap().into_data().unwrap()
    })
}

/// A copy waits to be sent while another is being sent and nothing is read yet (gRFC A6:
/// it may not be able to carry the body); the first chunk within the cap lets it go, and it
/// then replays the recording.
#[tokio::test]
async fn a_copy_is_sent_once_the_first_read_fits_the_cap() {
    let (tx, inner) = channel();
    let body = ReplayBody::new(inner, 16);
    let mut first = body.clone();
    let copy = body.clone();
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(
        first.poll_send(&mut cx),
        Poll::Ready(Ok(())),
        "alone: at once"
    );
    let waiting =
        tokio::spawn(async move { poll_fn(|cx| copy.poll_send(cx)).await.map(|()| copy) });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "nothing read yet: the copy waits");
    assert!(poll_noop(&mut first).is_pending());
    tx.send(Bytes::from_static(b"8 bytes.")).unwrap();
    assert!(matches!(poll_noop(&mut first), Poll::Ready(Some(Ok(_)))));
    let mut copy = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
        .await
        .expect("the waiting copy was never woken")
        .unwrap()
        .expect("recorded within the cap: sent");
    assert!(
        matches!(poll_noop(&mut copy), Poll::Ready(Some(Ok(f))) if f.data_ref().unwrap() == "8 bytes.")
    );
    assert!(copy.retire_handle().left_behind().is_none());
}

/// The copy that reads the body past the cap holds it; a copy waiting to be sent is then
/// left behind without being sent, and so is any attempt of a clone that is not the holder,
/// whatever it failed with (grpc-java `RetriableStreamTest`, `hedging_perRpcBufferLimitExceeded`:
/// past the limit the call commits to the stream that wrote it, the other is cancelled).
#[tokio::test]
async fn past_the_cap_a_waiting_copy_is_left_behind_unsent() {
    let (tx, inner) = channel();
    let body = ReplayBody::new(inner, 16);
    let mut holder = body.clone();
    let sent_early = body.clone();
    let copy = body.clone();
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(holder.poll_send(&mut cx), Poll::Ready(Ok(())));
    let waiting = tokio::spawn(async move { poll_fn(|cx| copy.poll_send(cx)).await });
    tokio::task::yield_now().await;
    assert!(poll_noop(&mut holder).is_pending());
    tx.send(Bytes::from(vec![1; 32])).unwrap();
    assert!(matches!(poll_noop(&mut holder), Poll::Ready(Some(Ok(_)))));
    assert!(body.is_capped());
    let waited = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
        .await
        .expect("the waiting copy was never woken")
        .unwrap();
    assert_eq!(waited, Err(BodyNotReplayable::capped(16)), "not sent");
    assert!(
        holder.retire_handle().left_behind().is_none(),
        "the holder answers"
    );
    assert_eq!(
        sent_early.retire_handle().left_behind(),
        Some(BodyNotReplayable::capped(16))
    );
    assert!(
        !sent_early
            .retire_handle()
            .left_behind()
            .unwrap()
            .to_string()
            .is_empty()
    );
}

/// A copy waiting to be sent goes when the copy being sent is over without reading (its
/// attempt failed, or was dropped): nobody else would read the body.
#[tokio::test]
async fn a_waiting_copy_goes_when_the_sender_is_over() {
    for retire in [true, false] {
        let (_tx, inner) = channel();
        let body = ReplayBody::new(inner, 16);
        let first = body.clone();
        let copy = body.clone();
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(first.poll_send(&mut cx), Poll::Ready(Ok(())));
        let waiting = tokio::spawn(async move { poll_fn(|cx| copy.poll_send(cx)).await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "retire {retire}");
        if retire {
            first.retire_handle().retire();
        } else {
            drop(first);
        }
        let sent = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the waiting copy was never woken")
            .unwrap();
        assert_eq!(sent, Ok(()), "retire {retire}");
    }
}

#[tokio::test]
async fn a_waiting_clone_is_woken_when_the_reader_is_dropped() {
    let (tx, inner) = channel();
    let body = ReplayBody::new(inner, DEFAULT_REPLAY_CAP);
    let waiting = wait_for_chunk(body.clone());
    tokio::task::yield_now().await;
    // Another clone polls the inner body after it: the inner body now holds its (dead)
    // waker only.
    let mut reader = body.clone();
    assert!(poll_noop(&mut reader).is_pending());
    drop(reader);
    tx.send(Bytes::from_static(b"late")).unwrap();
    let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
        .await
        .expect("the waiting clone was never woken")
        .unwrap();
    assert_eq!(got, "late");
}

#[tokio::test]
async fn a_waiting_clone_is_woken_when_another_reads() {
    let (tx, inner) = channel();
    let body = ReplayBody::new(inner, DEFAULT_REPLAY_CAP);
    let waiting = wait_for_chunk(body.clone());
    tokio::task::yield_now().await;
    let mut reader = body.clone();
    assert!(poll_noop(&mut reader).is_pending());
    tx.send(Bytes::from_static(b"data")).unwrap();
    // The inner body wakes the reader's (dead) waker; the reader reads and wakes the other.
    assert!(matches!(poll_noop(&mut reader), Poll::Ready(Some(Ok(_)))));
    let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
        .await
        .expect("the waiting clone was never woken")
        .unwrap();
    assert_eq!(got, "data");
}

#[tokio::test]
async fn the_reader_streams_on_past_the_cap_while_a_follower_fails() {
    let (tx, inner) = channel();
    let body = ReplayBody::new(inner, 4);
    let mut reader = body.clone();
    let mut follower = body.clone();
    tx.send(Bytes::from_static(b"abc")).unwrap();
    assert!(matches!(poll_noop(&mut reader), Poll::Ready(Some(Ok(_)))));
    tx.send(Bytes::from_static(b"de")).unwrap();
    assert!(matches!(poll_noop(&mut reader), Poll::Ready(Some(Ok(_)))));
    assert!(body.is_capped());
    match poll_noop(&mut follower) {
        Poll::Ready(Some(Err(e))) => assert!(is_not_replayable(&e)),
        other => panic!("{:?}", other.map(|o| o.map(|r| r.is_ok()))),
    }
    tx.send(Bytes::from_static(b"f")).unwrap();
    drop(tx);
    assert!(matches!(poll_noop(&mut reader), Poll::Ready(Some(Ok(_)))));
    assert!(matches!(poll_noop(&mut reader), Poll::Ready(None)));
}

#[tokio::test]
async fn an_inner_error_goes_to_the_reader_and_fails_the_others() {
    let stream = futures_stream({
        let mut n = 0;
        move |_| {
            n += 1;
            Poll::Ready(match n {
                1 => Some(Ok(Frame::data(Bytes::from_static(b"x")))),
                2 => Some(Err(std::io::Error::other("reset"))),
                _ => None,
            })
        }
    });
    let body = ReplayBody::new(StreamBody::new(stream), 64);
    let error = collect(body.clone()).await.unwrap_err();
    assert!(
        !is_not_replayable(&error),
        "the inner body's own error: {error}"
    );
    let error = collect(body.clone()).await.unwrap_err();
    assert!(is_not_replayable(&error));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Each clone yields exactly the source's bytes, or (past the cap) only the first
    /// does and the others fail.
    #[test]
    fn clones_yield_the_source_or_fail_past_the_cap(
        sizes in proptest::collection::vec(0usize..64, 0..12),
        cap in 0usize..400,
        clones in 1usize..4,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let (inner, all) = chunks(&sizes);
            let body = ReplayBody::new(inner, cap);
            let first = collect(body.clone()).await.unwrap().0;
            prop_assert_eq!(&first, &all);
            let capped = all.len() > cap;
            prop_assert_eq!(body.is_capped(), capped);
            for _ in 1..clones {
                match collect(body.clone()).await {
                    Ok((bytes, _)) => {
                        prop_assert!(!capped);
                        prop_assert_eq!(&bytes, &all);
                    }
                    Err(e) => {
                        prop_assert!(capped);
                        prop_assert!(is_not_replayable(&e));
                    }
                }
            }
            Ok(())
        })?;
    }
}
