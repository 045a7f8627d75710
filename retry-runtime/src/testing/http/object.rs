//! The objects `GET /objects/{name}` serves: deterministic bytes of any size made from a seed
//! (nothing is held in memory), their validators, the faults a request for one can meet, and the
//! record of each request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;

/// One version of an object the service serves at `GET /objects/{name}`: `len` bytes computed
/// from a seed, so that any range of any size is produced on demand and a test can compute the
/// same bytes to check what it downloaded.
///
/// The rule: the same name, size and version always give the same bytes, `ETag` and
/// `Last-Modified`; a new version (see [`Service::replace_object`]) gives other bytes, a new
/// strong `ETag` and a `Last-Modified` one minute later.
///
/// ```
/// use reattempt::testing::http::Service;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     let object = service.put_object("log", 100_000);
///     assert_eq!(object.len(), 100_000);
///     assert_eq!(object.version(), 1);
///     let body = reqwest::get(format!("{}/objects/log", service.url())).await.unwrap();
///     assert_eq!(body.headers()["etag"].to_str().unwrap(), object.etag());
///     assert_eq!(body.bytes().await.unwrap(), object.to_vec());
///     assert_eq!(object.range(10..20), object.to_vec()[10..20]);
/// }
/// ```
///
/// [`Service::replace_object`]: super::Service::replace_object
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    name: Arc<str>,
    len: u64,
    version: u32,
    seed: u64,
}

/// The size of the pieces the service sends an object's body in.
pub(super) const CHUNK: u64 = 64 * 1024;

/// The `Last-Modified` of version 1: 2026-01-01T00:00:00Z; each version is a minute later.
const FIRST_MODIFIED: u64 = 1_767_225_600;

impl Object {
    pub(super) fn new(name: &str, len: u64, version: u32) -> Object {
        // FNV-1a of the name, mixed with the version: another name or version, other bytes.
        let mut seed: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            seed = (seed ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Object {
            name: name.into(),
            len,
            version,
            seed: splitmix(seed ^ u64::from(version)),
        }
    }

    /// The next version: same name and size, other bytes and validators.
    pub(super) fn next(&self) -> Object {
        Object::new(&self.name, self.len, self.version + 1)
    }

    /// Its name, the last segment of its URL.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     assert_eq!(service.put_object("a.bin", 10).name(), "a.bin");
    /// }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its size in bytes.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let object = service.put_object("big", 64 << 20); // nothing is allocated
    ///     assert_eq!(object.len(), 64 << 20);
    /// }
    /// ```
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it has no bytes.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     assert!(service.put_object("empty", 0).is_empty());
    /// }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its version: 1 when put, one more at each replacement.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     service.put_object("a", 10);
    ///     assert_eq!(service.replace_object("a").version(), 2);
    /// }
    /// ```
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Its strong `ETag`, quotes included (`"a-v1-…"`).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let v1 = service.put_object("a", 10);
    ///     assert!(v1.etag().starts_with('"') && v1.etag().ends_with('"'));
    ///     assert_ne!(service.replace_object("a").etag(), v1.etag());
    /// }
    /// ```
    pub fn etag(&self) -> String {
        format!("\"{}-v{}-{:016x}\"", self.name, self.version, self.seed)
    }

    /// Its `Last-Modified` instant (whole seconds): 2026-01-01T00:00:00Z for version 1, a minute
    /// later for each next version.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let v1 = service.put_object("a", 10).last_modified();
    ///     let v2 = service.replace_object("a").last_modified();
    ///     assert_eq!(v2.duration_since(v1).unwrap(), Duration::from_secs(60));
    /// }
    /// ```
    pub fn last_modified(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(FIRST_MODIFIED + 60 * u64::from(self.version - 1))
    }

    /// Its `Last-Modified` as the header says it (an HTTP-date).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let object = service.put_object("a", 10);
    ///     assert_eq!(object.last_modified_header(), "Thu, 01 Jan 2026 00:00:00 GMT");
    /// }
    /// ```
    pub fn last_modified_header(&self) -> String {
        httpdate::fmt_http_date(self.last_modified())
    }

    /// The bytes in `range` (clipped to the object), computed on demand.
    ///
    /// # Panics
    /// When the range does not fit in memory (`usize`).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let object = service.put_object("a", 100);
    ///     assert_eq!(object.range(90..200).len(), 10);
    ///     assert_eq!(object.range(0..100), object.to_vec());
    /// }
    /// ```
    pub fn range(&self, range: std::ops::Range<u64>) -> Bytes {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        let len = usize::try_from(end - start).expect("a range that fits in memory");
        let mut out = Vec::with_capacity(len);
        let mut at = start;
        while at < end {
            let block = splitmix(self.seed.wrapping_add(at / 8)).to_le_bytes();
            let from = usize::try_from(at % 8).unwrap_or(0);
            let take = (8 - from).min(usize::try_from(end - at).unwrap_or(8));
            out.extend_from_slice(&block[from..from + take]);
            at += take as u64;
        }
        Bytes::from(out)
    }

    /// All its bytes, in pieces of 64 KiB from `from` on: what a test hashes to compare with a
    /// download, one piece in memory at a time.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let object = service.put_object("a", 200_000);
    ///     let sizes: Vec<usize> = object.chunks(0).map(|c| c.len()).collect();
    ///     assert_eq!(sizes, [65_536, 65_536, 65_536, 3_392]);
    ///     assert_eq!(object.chunks(199_999).count(), 1);
    /// }
    /// ```
    pub fn chunks(&self, from: u64) -> impl Iterator<Item = Bytes> + '_ {
        (from..self.len)
            .step_by(usize::try_from(CHUNK).unwrap_or(usize::MAX))
            .map(|at| self.range(at..at + CHUNK))
    }

    /// All its bytes in one buffer (for small objects).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     assert_eq!(service.put_object("a", 10).to_vec().len(), 10);
    /// }
    /// ```
    pub fn to_vec(&self) -> Vec<u8> {
        self.range(0..self.len).to_vec()
    }
}

/// `SplitMix64`'s output function: 8 well-mixed bytes per index.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What happens to one request for an object, drawn in turn from the object's script
/// ([`Service::script_object`]); a request with nothing scripted meets [`ObjectFault::Pass`].
///
/// Offsets are positions in the object (not in the response's body): `ResetAt(1 << 20)` on a
/// request for `bytes=524288-` sends 512 KiB, then resets. An offset at or before the first byte
/// sent strikes right after the headers; one at or past the end never strikes.
///
/// ```
/// use reattempt::testing::http::{ObjectFault, Service};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.put_object("a", 300_000);
///     service.script_object("a", [ObjectFault::ResetAt(100_000), ObjectFault::Status(503)]);
///     let url = format!("{}/objects/a", service.url());
///     let mut first = reqwest::get(&url).await.unwrap();
///     let mut got = 0;
///     let error = loop {
///         match first.chunk().await {
///             Ok(Some(chunk)) => got += chunk.len(),
///             Ok(None) => panic!("the body ended cleanly"),
///             Err(e) => break e,
///         }
///     };
///     assert_eq!(got, 100_000, "every byte before the offset arrived, then a reset: {error}");
///     assert_eq!(reqwest::get(&url).await.unwrap().status(), 503);
///     assert_eq!(reqwest::get(&url).await.unwrap().status(), 200);
/// }
/// ```
///
/// [`Service::script_object`]: super::Service::script_object
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ObjectFault {
    /// No fault: the request is served whole.
    Pass,
    /// Once every byte before this offset of the object has been written and has left the
    /// server's socket, the connection is reset (TCP RST): the client reads those bytes, then
    /// an error, never a clean end.
    ResetAt(u64),
    /// At this offset the body stops, and the connection stays open, silent, until the client
    /// gives up (or the service stops, or 30 s pass; then it is reset).
    StallAt(u64),
    /// This status (`503`, `500`, `404`, …) instead of the object, with a JSON error body.
    ///
    /// # Panics
    /// The request's handler panics when this is not a status code (100 to 999).
    Status(u16),
}

impl std::fmt::Display for ObjectFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ObjectFault::Pass => f.write_str("no fault"),
            ObjectFault::ResetAt(at) => write!(f, "reset at byte {at}"),
            ObjectFault::StallAt(at) => write!(f, "stall at byte {at}"),
            ObjectFault::Status(status) => write!(f, "{status}"),
        }
    }
}

/// One request for an object, as the service saw it and answered it:
/// [`Service::object_requests`].
///
/// ```
/// use reattempt::testing::http::Service;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     let object = service.put_object("a", 1_000);
///     reqwest::Client::new()
///         .get(format!("{}/objects/a", service.url()))
///         .header("Range", "bytes=600-")
///         .header("If-Range", object.etag())
///         .send()
///         .await
///         .unwrap()
///         .bytes()
///         .await
///         .unwrap();
///     let seen = &service.object_requests("a")[0];
///     assert_eq!(seen.range.as_deref(), Some("bytes=600-"));
///     assert_eq!(seen.if_range, Some(object.etag()));
///     assert_eq!((seen.status, seen.start, seen.written), (206, 600, 400));
///     assert_eq!(service.object_bytes_written("a"), 400);
/// }
/// ```
///
/// [`Service::object_requests`]: super::Service::object_requests
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectRequest {
    /// Its `Range` header.
    pub range: Option<String>,
    /// Its `If-Range` header.
    pub if_range: Option<String>,
    /// The fault it met.
    pub fault: ObjectFault,
    /// The version it was answered from.
    pub version: u32,
    /// The status answered (200, 206, 416, or a scripted one).
    pub status: u16,
    /// The object's offset of the first body byte (0 for a 200).
    pub start: u64,
    /// The body bytes handed to the connection so far (they keep counting while the body is
    /// sent): after a reset, every one of them reached the client's socket.
    pub written: u64,
}

/// A request's record as the service keeps it: its body's counter is shared with the body.
#[derive(Debug)]
pub(super) struct ObjectLog {
    pub(super) seen: ObjectRequest,
    pub(super) written: Arc<AtomicU64>,
}

impl ObjectLog {
    pub(super) fn snapshot(&self) -> ObjectRequest {
        ObjectRequest {
            written: self.written.load(SeqCst),
            ..self.seen.clone()
        }
    }
}

/// An object's entry in the service's state: its current version and its scripts.
#[derive(Debug)]
pub(super) struct ObjectEntry {
    pub(super) current: Object,
    pub(super) faults: std::collections::VecDeque<ObjectFault>,
    pub(super) ignore_range: bool,
    pub(super) without_etag: bool,
    /// Replace the object when this many requests have arrived (before serving the next).
    pub(super) replace_after: Option<usize>,
    pub(super) requests: Vec<ObjectLog>,
}

impl ObjectEntry {
    pub(super) fn new(current: Object) -> ObjectEntry {
        ObjectEntry {
            current,
            faults: std::collections::VecDeque::new(),
            ignore_range: false,
            without_etag: false,
            replace_after: None,
            requests: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_the_same_bytes_as_the_whole() {
        let object = Object::new("x", 1_000, 1);
        let whole = object.to_vec();
        for (a, b) in [
            (0_usize, 1_usize),
            (3, 11),
            (7, 8),
            (8, 16),
            (999, 1_000),
            (500, 2_000),
        ] {
            assert_eq!(object.range(a as u64..b as u64), whole[a..b.min(1_000)]);
        }
        let joined: Vec<u8> = object.chunks(0).flat_map(|c| c.to_vec()).collect();
        assert_eq!(joined, whole);
    }

    #[test]
    fn versions_and_names_differ_in_bytes_and_validators() {
        let v1 = Object::new("x", 64, 1);
        let v2 = v1.next();
        let y = Object::new("y", 64, 1);
        assert_ne!(v1.to_vec(), v2.to_vec());
        assert_ne!(v1.to_vec(), y.to_vec());
        assert_ne!(v1.etag(), v2.etag());
        assert_ne!(v1.last_modified(), v2.last_modified());
        assert_eq!(v1, Object::new("x", 64, 1), "deterministic");
    }
}
