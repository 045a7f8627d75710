//! An attempt that may return a borrow of what the caller lent it mutably: `#[retryable]` on
//! `async fn conn(&mut self) -> Result<&mut Connection, E>` (reconnect, then hand out the
//! connection), or on a function with a `&'a mut` argument whose `'a` the `Ok` names.
//!
//! Each attempt runs on a fresh reborrow of the lent `&'s mut S`, and the attempt that ends the
//! call hands out a borrow of it. Written as a plain loop, the borrow checker refuses it (E0499:
//! a borrow that may be returned lasts to the function's end, so it conflicts with the next
//! iteration's reborrow even where it was dropped; NLL's "problem case #3", which Polonius
//! accepts). Here each attempt is a function **higher-ranked over the reborrow's lifetime**
//! (`for<'r> FnOnce(&'r mut S, …) -> … Result<Of<'r>, E>`), and only its `Ok` is given the lent
//! lifetime `'s` (one narrowly scoped `unsafe`, [`extend`]), as `polonius-the-crab` does.
//!
//! # Why this is sound
//!
//! The attempt is type-checked once for every `'r` and `'x`, knowing only what its signature
//! implies: `S: 'r` (from `&'r mut S`), `'s: 'r` and `'r: 'x` (from [`Lent<'r, 's, 'x>`]), and
//! `C: 'x` (from [`Captures<'x, C>`]). `'x` is its future's lifetime: the future may hold the
//! reborrow and the captures (the other arguments, each copied, reborrowed or cloned for this
//! attempt), whatever their lifetimes, since each outlives `'x`. Its `Ok` is typed `'r`, and the
//! only fact with `'r` on the right is `'s: 'r`; so a borrow in it is one of:
//! - a reborrow of the lent `&'r mut S`: valid for `'s` once the lent reference is not used
//!   again, and the driver never uses it again after an `Ok` (it returns it only with an `Err`,
//!   which cannot hold a borrow of it: `E` is one type outside the `for<'r, 'x>`);
//! - data the attempt can show to outlive `'r` for *every* `'r` below `'s`: data that outlives
//!   `'s` itself (a `&'s str` argument, `'static` data, what `S`'s own lifetimes borrow).
//!
//! A borrow of anything else (another argument with a shorter or unrelated lifetime, a second
//! `&mut` argument, a local, a reference held by a by-value argument, the captures' `'x`, the
//! attempt's own future) cannot be typed `'r` for every `'r`: `C: 'x` and `'r: 'x` relate the
//! captures to `'x` only, never to `'r`. rustc then requires what such a borrow would need (its
//! lifetime to outlive `'s`) of the function that calls the driver, and checks it there: the
//! shapes below fail in the caller (an E0499 from the retry loop, an E0597 for a local), not in
//! the attempt, and a capture that does outlive `'s` (`tag: &'a str` beside `&'a mut self`) is
//! accepted, soundly. By parametricity, the
//! attempt behaves as if it had been handed `&'s mut S` itself, so its `Ok` is what it would have
//! returned then, typed `Of<'s>`. `Of<'r>` and `Of<'s>` are one type but for a lifetime
//! ([`WithLt`] cannot tell lifetimes apart: an impl cannot match on one), so their layouts are
//! equal.
//!
//! The facts the attempt assumes hold at its one call, where the driver picks `'r` and `'x`
//! (and rustc checks that the arguments' types are well-formed): the reborrow is taken from the
//! `&'s mut S` (`'s: 'r`), and the future is awaited and dropped before the driver uses the lent
//! reference again, so both the reborrow and the captures (moved in by the caller, with
//! lifetimes that outlive the driver's call) outlive it (`'r: 'x`, `C: 'x`).
//!
//! The captures come as an argument, not as the closure's own captures: inside a closure, a
//! captured borrow of lifetime `'u` put in a future of the closure's own `'x` makes rustc require
//! `'u` to outlive every region it knows above `'x`, `'s` among them (through `'r`), which
//! refuses `url: &str` beside `&mut self` (sound, but too strict). An implied bound of the
//! argument's own type (`C: 'x`) is a fact, not a requirement. (A closure's direct captures
//! still compile where they outlive `'s`.)
//!
//! The attempt's future is boxed as `Send` (`LentAttempt`), so that the call's future, which
//! holds it, is `Send` without naming a higher-ranked associated type that the `Send` analysis
//! cannot prove (an `AsyncFnOnce` bound's future is "not general enough" as soon as `S` has a
//! lifetime): an attempt that is not `Send` is a compile error on this path, and so is a
//! recursive lent method (its own future's `Send`-ness is what is being proven).
//!
//! What it rejects, each a compile error (the shapes that broke the first attempt at this):
//!
//! ```compile_fail
//! # use retry_runtime::__private::{Call, Lends, WithLt};
//! // A shared argument of its own lifetime, returned as the lent one's.
//! async fn f<'a>(call: &mut Call<'_>, lent: &'a mut u32, other: &u32) -> &'a u32 {
//!     let of = Lends::<dyn for<'r> WithLt<'r, Of = &'r u32>>::new();
//!     let out = call.attempt_lent(lent, of, None, (other,), |_, c, _| {
//!         let (other,) = c.into_inner();
//!         Box::pin(async move { Ok::<_, ()>(other) })
//!     });
//!     match out.await {
//!         Ok(v) => v,
//!         Err(_) => unreachable!(),
//!     }
//! }
//! ```
//!
//! ```compile_fail
//! # use retry_runtime::__private::{Call, Lends, WithLt};
//! // A second `&mut` argument, reborrowed for each attempt and returned as the lent one: the
//! // reborrow would have to last as long as the lent one, and the next attempt's conflicts.
//! async fn f<'a>(call: &mut Call<'_>, lent: &'a mut u32, other: &'a mut u32) -> &'a mut u32 {
//!     let mut lent = Some(lent);
//!     loop {
//!         let of = Lends::<dyn for<'r> WithLt<'r, Of = &'r mut u32>>::new();
//!         let taken = lent.take().unwrap();
//!         let out = call.attempt_lent(taken, of, None, (&mut *other,), |_, c, _| {
//!             let (other,) = c.into_inner();
//!             Box::pin(async move { Ok::<_, ()>(other) })
//!         });
//!         match out.await {
//!             Ok(v) => return v,
//!             Err(((), back)) => lent = Some(back),
//!         }
//!     }
//! }
//! ```
//!
//! ```compile_fail
//! # use retry_runtime::__private::{Call, Lends, WithLt};
//! // A by-value argument holding a reference, returned through it.
//! struct Holder<'h>(&'h mut u32);
//! async fn f<'a>(call: &mut Call<'_>, lent: &'a mut u32, h: Holder<'_>) -> &'a mut u32 {
//!     let of = Lends::<dyn for<'r> WithLt<'r, Of = &'r mut u32>>::new();
//!     let out = call.attempt_lent(lent, of, None, (h,), |_, c, _| {
//!         let (h,) = c.into_inner();
//!         Box::pin(async move { Ok::<_, ()>(h.0) })
//!     });
//!     match out.await {
//!         Ok(v) => v,
//!         Err(_) => unreachable!(),
//!     }
//! }
//! ```
//!
//! ```compile_fail
//! # use retry_runtime::__private::{Call, Lends, WithLt};
//! // An error borrowing from the lent reference: `E` is outside the `for<'r, 'x>`.
//! async fn f<'a>(call: &mut Call<'_>, lent: &'a mut u32) -> Result<&'a mut u32, &'a u32> {
//!     let of = Lends::<dyn for<'r> WithLt<'r, Of = &'r mut u32>>::new();
//!     let out = call.attempt_lent(lent, of, None, (), |l, _, _| Box::pin(async move { Err(&*l) }));
//!     out.await.map_err(|(e, _)| e)
//! }
//! ```
//!
//! ```compile_fail
//! # use retry_runtime::__private::{Call, Lends, WithLt};
//! // A borrow of a local, passed in the captures, returned as the lent one.
//! async fn f<'a>(call: &mut Call<'_>, lent: &'a mut u32) -> &'a mut u32 {
//!     let of = Lends::<dyn for<'r> WithLt<'r, Of = &'r mut u32>>::new();
//!     let mut n = 0;
//!     let out = call.attempt_lent(lent, of, None, (&mut n,), |_, c, _| {
//!         let (log,) = c.into_inner();
//!         Box::pin(async move { Ok::<_, ()>(&mut *log) })
//!     });
//!     match out.await {
//!         Ok(v) => v,
//!         Err(_) => unreachable!(),
//!     }
//! }
//! ```
//!
//! This is the soundness that the first attempt at this lacked (it extended the final `Ok`
//! without knowing which input it borrows from): here the compiler knows.

use core::future::Future;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::pin::Pin;

use crate::drivers::call::Call;
use crate::error::Elapsed;

/// A type-level function of a lifetime: `dyn for<'r> WithLt<'r, Of = &'r mut Conn>` implements
/// `WithLt<'a>` for every `'a`, with `Of = &'a mut Conn` (no item to declare).
pub trait WithLt<'r> {
    /// The type at `'r`.
    type Of;
}

/// What an attempt of a lent call knows of its lifetimes: `'s: 'r` (`'s` is the lent reference's,
/// `'r` its reborrow's), so that it may return data that outlives `'s` (a `&'s str` argument)
/// beside its reborrow; and `'r: 'x` (`'x` is its future's), so that the future may hold the
/// reborrow.
pub type Lent<'r, 's, 'x> = PhantomData<(&'x &'r (), &'r &'s ())>;

/// One attempt's future, made by a lent call's attempt from its reborrow and its [`Captures`].
pub type LentAttempt<'x, T> = Pin<Box<dyn Future<Output = T> + Send + 'x>>;

/// What an attempt of a lent call takes beside its reborrow (the other arguments, each copied,
/// reborrowed or cloned for it), known to outlive its future's lifetime `'x` (`C: 'x`, an implied
/// bound of this argument's type), whatever their own lifetimes are.
pub struct Captures<'x, C: 'x>(C, PhantomData<&'x ()>);

impl<'x, C: 'x> Captures<'x, C> {
    /// The values.
    #[inline]
    pub fn into_inner(self) -> C {
        self.0
    }
}

/// The `R` of [`Call::attempt_lent`] (`dyn for<'r> WithLt<'r, Of = …>`), passed as a value.
pub struct Lends<R: ?Sized>(PhantomData<fn() -> PhantomData<R>>);

impl<R: ?Sized> Lends<R> {
    /// The marker.
    #[inline]
    #[must_use]
    pub const fn new() -> Self {
        Lends(PhantomData)
    }
}

impl<R: ?Sized> Default for Lends<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// `Of<'r>` as `Of<'s>`.
///
/// # Safety
///
/// `v` must be what an attempt higher-ranked over `'r` (`for<'r, 'x> FnOnce(&'r mut S, …,
/// Lent<'r, 's, 'x>) -> … Of<'r> …`) returned from a reborrow of a `&'s mut S` that the caller
/// does not use again (see the module's documentation).
#[allow(
    unsafe_code,
    reason = "NLL problem case #3: see the module's documentation"
)]
#[inline]
unsafe fn extend<'r, 's, R: ?Sized + for<'x> WithLt<'x>>(
    v: <R as WithLt<'r>>::Of,
) -> <R as WithLt<'s>>::Of {
    const {
        assert!(
            size_of::<<R as WithLt<'r>>::Of>() == size_of::<<R as WithLt<'s>>::Of>()
                && align_of::<<R as WithLt<'r>>::Of>() == align_of::<<R as WithLt<'s>>::Of>()
        );
    }
    let v = ManuallyDrop::new(v);
    // SAFETY: one type but for a lifetime (`WithLt` cannot tell lifetimes apart), so one layout
    // (checked above too); `v` is not dropped, so the value keeps one owner; the lifetime is the
    // caller's to vouch for (see the module's documentation).
    unsafe { core::mem::transmute_copy::<<R as WithLt<'r>>::Of, <R as WithLt<'s>>::Of>(&*v) }
}

impl Call<'_> {
    /// One attempt of a call whose `Ok` may borrow from `lent` (the function's `&mut self`, or
    /// its `&'a mut` argument): `attempt` makes the attempt's future from a reborrow of it
    /// (`timed_out`: the attempt runs under the policy's `timeout`, as
    /// [`attempt_timed_into`](Self::attempt_timed_into)). Gives the `Ok` with the lent lifetime,
    /// or the error and `lent` back, for the next attempt or the fallback.
    ///
    /// # Errors
    /// The attempt's error, with `lent`.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use reattempt::{FnHooks, RetryPolicy};
    ///     use retry_runtime::__private::{Call, Decision, Guards, Lends, WithLt};
    ///
    ///     struct Pool { conn: u32, tries: u32 }
    ///
    ///     async fn conn(pool: &mut Pool) -> Result<&mut u32, &'static str> {
    ///         let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///         let mut call = Call::new(&policy);
    ///         let mut lent = Some(pool);
    ///         loop {
    ///             let Some(pool) = lent.take() else { unreachable!() };
    ///             let res = call
    ///                 .attempt_lent(pool, Lends::<dyn for<'r> WithLt<'r, Of = &'r mut u32>>::new(), None, (), |pool, _, _| {
    ///                     Box::pin(async move {
    ///                         pool.tries += 1;
    ///                         if pool.tries < 2 { Err("busy") } else { Ok(&mut pool.conn) }
    ///                     })
    ///                 })
    ///                 .await;
    ///             let res = res.map_err(|(e, back)| { lent = Some(back); e });
    ///             match call.decide("conn", &mut FnHooks::of(&res), res, Guards::NONE) {
    ///                 Decision::Stop(out) => break out,
    ///                 Decision::Retry(_) => {}
    ///             }
    ///         }
    ///     }
    ///     let mut pool = Pool { conn: 7, tries: 0 };
    ///     *conn(&mut pool).await.unwrap() += 1;
    ///     assert_eq!((pool.conn, pool.tries), (8, 2));
    /// }
    /// ```
    pub async fn attempt_lent<'s, S, R, C, E, F>(
        &mut self,
        lent: &'s mut S,
        _of: Lends<R>,
        timed_out: Option<fn(Elapsed) -> E>,
        captures: C,
        attempt: F,
    ) -> Result<<R as WithLt<'s>>::Of, (E, &'s mut S)>
    where
        S: ?Sized,
        R: ?Sized + for<'r> WithLt<'r>,
        F: for<'r, 'x> FnOnce(
            &'r mut S,
            Captures<'x, C>,
            Lent<'r, 's, 'x>,
        ) -> LentAttempt<'x, Result<<R as WithLt<'r>>::Of, E>>,
    {
        let fut = attempt(&mut *lent, Captures(captures, PhantomData), PhantomData);
        let out = match timed_out {
            Some(timed_out) => self.attempt_timed_into(fut, timed_out).await,
            None => self.attempt(fut).await,
        };
        // SAFETY: `attempt` is higher-ranked over the reborrow's lifetime, and `lent` is not
        // used again on this path (see the module's documentation).
        #[allow(unsafe_code, reason = "see `extend`")]
        let out = out.map(|v| unsafe { extend::<R>(v) });
        // A `match`, not `map_err(|e| (e, lent))`: passing a closure that owns `lent` to a
        // function retags it, which under Stacked Borrows invalidates the reborrow the `Ok`
        // holds (Miri's report); here `lent` moves only on the `Err` path.
        match out {
            Ok(v) => Ok(v),
            Err(e) => Err((e, lent)),
        }
    }

    /// [`attempt_lent`](Self::attempt_lent) for a blocking function.
    ///
    /// # Errors
    /// The attempt's error, with `lent`.
    pub fn attempt_lent_blocking<'s, S, R, E, F>(
        &mut self,
        lent: &'s mut S,
        _of: Lends<R>,
        attempt: F,
    ) -> Result<<R as WithLt<'s>>::Of, (E, &'s mut S)>
    where
        S: ?Sized,
        R: ?Sized + for<'r> WithLt<'r>,
        F: for<'r> FnOnce(&'r mut S, Lent<'r, 's, 'r>) -> Result<<R as WithLt<'r>>::Of, E>,
    {
        let out = self.attempt_blocking(|| attempt(&mut *lent, PhantomData));
        // SAFETY: as in `attempt_lent`.
        #[allow(unsafe_code, reason = "see `extend`")]
        let out = out.map(|v| unsafe { extend::<R>(v) });
        // A `match`, not `map_err(|e| (e, lent))`: passing a closure that owns `lent` to a
        // function retags it, which under Stacked Borrows invalidates the reborrow the `Ok`
        // holds (Miri's report); here `lent` moves only on the `Err` path.
        match out {
            Ok(v) => Ok(v),
            Err(e) => Err((e, lent)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Lends, WithLt};
    use crate::drivers::call::Call;
    use crate::error::Elapsed;
    use crate::schedule::policy::RetryPolicy;

    #[derive(Debug, Default)]
    struct Pool {
        conn: u32,
        tries: u32,
    }

    /// A borrowed holder of the lent reference (`S` with a lifetime).
    struct Client<'c> {
        pool: &'c mut Pool,
    }

    fn of<'x>() -> Lends<dyn for<'r> WithLt<'r, Of = &'r mut u32> + 'x> {
        Lends::new()
    }

    /// The loop the attribute writes, without it: each attempt on a reborrow, the `Ok` returned;
    /// beside the lent reference, a `&str` and a `&mut` of their own lifetimes, in the captures
    /// (each attempt reads the one and writes a reborrow of the other).
    async fn conn<'p>(
        pool: &'p mut Pool,
        (fail, timed): (u32, bool),
        url: &str,
        log: &mut Vec<String>,
    ) -> Result<&'p mut u32, u32> {
        let policy = RetryPolicy::builder()
            .max_attempts(3)
            .timeout(Duration::from_millis(10))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let mut call = Call::new(&policy);
        let mut lent = Some(pool);
        let timed_out: Option<fn(Elapsed) -> u32> = timed.then_some(|_| 504);
        loop {
            let pool = lent.take().unwrap_or_else(|| unreachable!());
            let out = call
                .attempt_lent(pool, of(), timed_out, (url, &mut *log), |pool, c, _| {
                    let (url, log) = c.into_inner();
                    Box::pin(async move {
                        pool.tries += 1;
                        log.push(format!("{url} {}", pool.tries));
                        if pool.tries <= fail {
                            if timed {
                                std::future::pending::<()>().await;
                            }
                            return Err(pool.tries);
                        }
                        Ok(&mut pool.conn)
                    })
                })
                .await;
            match out {
                Ok(c) => break Ok(c),
                Err((e, back)) if back.tries >= 3 => break Err(e),
                Err((_, back)) => lent = Some(back),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_attempts_borrow_is_returned() {
        let mut pool = Pool::default();
        *conn(&mut pool, (2, false), "u", &mut Vec::new())
            .await
            .unwrap_or_else(|e| panic!("{e}")) += 10;
        assert_eq!((pool.conn, pool.tries), (10, 3));
        let mut pool = Pool::default();
        assert_eq!(
            conn(&mut pool, (5, false), "u", &mut Vec::new())
                .await
                .err(),
            Some(3)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_timed_out_attempt_gives_the_lent_reference_back() {
        let mut pool = Pool::default();
        *conn(&mut pool, (1, true), "u", &mut Vec::new())
            .await
            .unwrap_or_else(|e| panic!("{e}")) += 1;
        assert_eq!((pool.conn, pool.tries), (1, 2));
        let mut pool = Pool::default();
        assert_eq!(
            conn(&mut pool, (5, true), "u", &mut Vec::new()).await.err(),
            Some(504)
        );
    }

    impl Client<'_> {
        async fn conn(&mut self) -> Result<&mut u32, u32> {
            let policy = RetryPolicy::builder()
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            let mut call = Call::new(&policy);
            call.attempt_lent(self, of(), None, (), |c, _, _| {
                Box::pin(async move {
                    tokio::task::yield_now().await;
                    Ok(&mut c.pool.conn)
                })
            })
            .await
            .map_err(|(e, _)| e)
        }
    }

    fn assert_send<T: Send>(_: T) {}

    #[tokio::test]
    async fn the_call_is_send_when_a_lifetime_is_in_the_lent_type() {
        let mut pool = Pool::default();
        let mut client = Client { pool: &mut pool };
        assert_send(client.conn());
        *client.conn().await.unwrap_or_else(|e| panic!("{e}")) = 4;
        assert_eq!(pool.conn, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn lent_beside_arguments_of_other_lifetimes() {
        let mut pool = Pool::default();
        let mut log = Vec::new();
        assert_send(conn(&mut pool, (1, false), "u", &mut log));
        let c = {
            let url = String::from("db");
            conn(&mut pool, (1, false), &url, &mut log)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        };
        *c = 5;
        assert_eq!(log, ["db 1", "db 2"]);
        assert_eq!((pool.conn, pool.tries), (5, 2));
    }

    #[test]
    fn blocking() {
        let policy = RetryPolicy::builder()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let mut call = Call::new(&policy);
        let mut pool = Pool::default();
        let tag = String::from("t");
        // A shared borrow that outlives the lent one may be returned beside it.
        let (c, t) = {
            let tag: &str = &tag;
            let lent = &mut pool;
            call.attempt_lent_blocking(
                lent,
                Lends::<dyn for<'r> WithLt<'r, Of = (&'r mut u32, &'r str)>>::new(),
                |p, _| Ok::<_, ()>((&mut p.conn, tag)),
            )
            .unwrap_or_else(|((), _)| unreachable!())
        };
        *c = 3;
        assert_eq!(t, "t");
        assert_eq!(pool.conn, 3);
    }
}
