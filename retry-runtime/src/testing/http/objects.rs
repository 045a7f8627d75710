//! The service's objects, scripted and read back: `GET /objects/{name}`.

use super::object::{Object, ObjectEntry, ObjectFault, ObjectLog, ObjectRequest};
use super::service::Service;
use super::state::Records;

/// Objects: `GET /objects/{name}` serves each object put with [`Service::put_object`], honouring
/// `Range: bytes=N-` (and `bytes=N-M`) with a 206 and its `Content-Range`, and `If-Range` with a
/// strong `ETag` or an HTTP-date (RFC 9110 §13.1.5: a validator that does not match gets the
/// whole current object with a 200). Every answer carries `ETag` (unless
/// [`object_without_etag`](Service::object_without_etag)) and `Last-Modified`; the body comes in
/// pieces of 64 KiB computed on demand, so a 64 MiB object costs no memory per request.
impl Service {
    /// Serves an object of `len` bytes at `/objects/{name}` (version 1, replacing any object of
    /// that name and its scripts); gives it, to compute the bytes a download should get.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let object = service.put_object("a", 1_000);
    ///     let url = format!("{}/objects/a", service.url());
    ///     let part = reqwest::Client::new().get(&url).header("Range", "bytes=900-").send().await.unwrap();
    ///     assert_eq!(part.status(), 206);
    ///     assert_eq!(part.headers()["content-range"], "bytes 900-999/1000");
    ///     assert_eq!(part.bytes().await.unwrap(), object.range(900..1_000));
    /// }
    /// ```
    pub fn put_object(&self, name: &str, len: u64) -> Object {
        let object = Object::new(name, len, 1);
        self.records()
            .objects
            .insert(name.to_owned(), ObjectEntry::new(object.clone()));
        object
    }

    /// The object's current version, if one was put.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     assert_eq!(service.object("a"), None);
    ///     let object = service.put_object("a", 10);
    ///     assert_eq!(service.object("a"), Some(object));
    /// }
    /// ```
    pub fn object(&self, name: &str) -> Option<Object> {
        self.records()
            .objects
            .get(name)
            .map(|entry| entry.current.clone())
    }

    /// Replaces the object by its next version now (same size, new bytes, new `ETag`,
    /// `Last-Modified` a minute later); gives the new version.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let v1 = service.put_object("a", 100);
    ///     let v2 = service.replace_object("a");
    ///     // A resume validated by the old ETag gets the whole new object.
    ///     let answer = reqwest::Client::new()
    ///         .get(format!("{}/objects/a", service.url()))
    ///         .header("Range", "bytes=50-")
    ///         .header("If-Range", v1.etag())
    ///         .send()
    ///         .await
    ///         .unwrap();
    ///     assert_eq!(answer.status(), 200);
    ///     assert_eq!(answer.bytes().await.unwrap(), v2.to_vec());
    /// }
    /// ```
    ///
    /// # Panics
    /// When no object of that name was put.
    pub fn replace_object(&self, name: &str) -> Object {
        let mut records = self.records();
        let entry = entry(&mut records, name);
        entry.current = entry.current.next();
        entry.current.clone()
    }

    /// Replaces the object by its next version once `requests` requests for it have arrived (at
    /// once if they have): the first `requests` are answered from the current version, the later
    /// ones from the next.
    ///
    /// ```
    /// use reattempt::testing::http::Service;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     let v1 = service.put_object("a", 100);
    ///     service.replace_object_after("a", 1);
    ///     let get = || reqwest::get(format!("{}/objects/a", service.url()));
    ///     assert_eq!(get().await.unwrap().headers()["etag"].to_str().unwrap(), v1.etag());
    ///     assert_ne!(get().await.unwrap().headers()["etag"].to_str().unwrap(), v1.etag());
    ///     let versions: Vec<u32> = service.object_requests("a").iter().map(|r| r.version).collect();
    ///     assert_eq!(versions, [1, 2]);
    /// }
    /// ```
    ///
    /// # Panics
    /// When no object of that name was put.
    pub fn replace_object_after(&self, name: &str, requests: usize) {
        let mut records = self.records();
        let entry = entry(&mut records, name);
        if entry.requests.len() >= requests {
            entry.current = entry.current.next();
        } else {
            entry.replace_after = Some(requests);
        }
    }

    /// Appends faults to the object's script: its next requests meet them in turn (a list of
    /// reset offsets is one `ResetAt` per request).
    ///
    /// ```
    /// use reattempt::testing::http::{ObjectFault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.put_object("a", 1_000);
    ///     service.script_object("a", [ObjectFault::Status(503)]);
    ///     let get = || reqwest::get(format!("{}/objects/a", service.url()));
    ///     assert_eq!(get().await.unwrap().status(), 503);
    ///     assert_eq!(get().await.unwrap().status(), 200);
    /// }
    /// ```
    ///
    /// # Panics
    /// When no object of that name was put.
    pub fn script_object(&self, name: &str, faults: impl IntoIterator<Item = ObjectFault>) {
        entry(&mut self.records(), name).faults.extend(faults);
    }

    /// Whether the object's requests ignore `Range` (and `If-Range`): always a 200 with the
    /// whole object, and no `Accept-Ranges`, as a server without range support answers.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let object = service.put_object("a", 100);
    ///     service.ignore_range("a", true);
    ///     let answer = reqwest::Client::new()
    ///         .get(format!("{}/objects/a", service.url()))
    ///         .header("Range", "bytes=50-")
    ///         .send()
    ///         .await
    ///         .unwrap();
    ///     assert_eq!(answer.status(), 200);
    ///     assert_eq!(answer.bytes().await.unwrap().len(), 100);
    /// }
    /// ```
    ///
    /// # Panics
    /// When no object of that name was put.
    pub fn ignore_range(&self, name: &str, on: bool) {
        entry(&mut self.records(), name).ignore_range = on;
    }

    /// Whether the object is served without an `ETag`, so that `Last-Modified` is its only
    /// validator (an `If-Range` then has to be a date; an `ETag` never matches).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     let object = service.put_object("a", 100);
    ///     service.object_without_etag("a", true);
    ///     let answer = reqwest::Client::new()
    ///         .get(format!("{}/objects/a", service.url()))
    ///         .header("Range", "bytes=50-")
    ///         .header("If-Range", object.last_modified_header())
    ///         .send()
    ///         .await
    ///         .unwrap();
    ///     assert_eq!(answer.status(), 206);
    ///     assert!(answer.headers().get("etag").is_none());
    /// }
    /// ```
    ///
    /// # Panics
    /// When no object of that name was put.
    pub fn object_without_etag(&self, name: &str, on: bool) {
        entry(&mut self.records(), name).without_etag = on;
    }

    /// The requests for the object, in order of arrival, with the body bytes each has had
    /// written so far.
    ///
    /// ```
    /// use reattempt::testing::http::{ObjectFault, Service};
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = Service::start().await;
    ///     service.put_object("a", 200_000);
    ///     service.script_object("a", [ObjectFault::ResetAt(70_000)]);
    ///     let url = format!("{}/objects/a", service.url());
    ///     assert!(reqwest::get(&url).await.unwrap().bytes().await.is_err());
    ///     let rest = reqwest::Client::new().get(&url).header("Range", "bytes=70000-").send();
    ///     assert_eq!(rest.await.unwrap().bytes().await.unwrap().len(), 130_000);
    ///     let written: Vec<u64> = service.object_requests("a").iter().map(|r| r.written).collect();
    ///     assert_eq!(written, [70_000, 130_000]);
    /// }
    /// ```
    pub fn object_requests(&self, name: &str) -> Vec<ObjectRequest> {
        self.records()
            .objects
            .get(name)
            .map(|entry| entry.requests.iter().map(ObjectLog::snapshot).collect())
            .unwrap_or_default()
    }

    /// The body bytes written for the object over all its requests: its size plus what was
    /// fetched again, for a download that completed.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     let service = reattempt::testing::http::Service::start().await;
    ///     service.put_object("a", 1_000);
    ///     for _ in 0..2 {
    ///         reqwest::get(format!("{}/objects/a", service.url())).await.unwrap().bytes().await.unwrap();
    ///     }
    ///     assert_eq!(service.object_bytes_written("a"), 2_000);
    /// }
    /// ```
    pub fn object_bytes_written(&self, name: &str) -> u64 {
        self.object_requests(name).iter().map(|r| r.written).sum()
    }
}

fn entry<'r>(records: &'r mut Records, name: &str) -> &'r mut ObjectEntry {
    records
        .objects
        .get_mut(name)
        .unwrap_or_else(|| panic!("no object {name:?}: put it first (Service::put_object)"))
}
