//! The value a retry loop returns when it borrows from what each attempt reborrowed.
//!
//! `async fn conn(&mut self) -> Result<&mut Connection, E>` under `#[retryable]`: each attempt
//! runs the body on a fresh reborrow of `*self`, and the attempt that ends the call hands out a
//! borrow of it. The borrow checker refuses the loop (E0499, "mutably borrowed here in the
//! previous iteration"): a borrow that may be returned must last to the function's end, so it
//! conflicts with the next iteration's reborrow even on the path where it was dropped. That is
//! NLL's "problem case #3", which Polonius accepts; stable Rust has no safe spelling of it that
//! does not run the body again. [`returned_borrow`] gives the returned value the function's
//! lifetimes once the loop has decided to stop with it.

use core::marker::PhantomData;
use core::mem::ManuallyDrop;

/// `ok` as `U`: the same type but for its lifetimes, which become those the caller expects.
///
/// # Safety
///
/// `T` and `U` must be one type but for lifetimes; every lifetime of `ok` that is shorter than
/// `U`'s must be a reborrow, made for one attempt, of a reference the function holds for `U`'s
/// lifetime (`&mut self`, a `&'a mut` argument: not of a value the function owns, such as a
/// receiver taken by value); and after this call nothing may use those references or anything
/// borrowed from them but `ok`: no earlier attempt's outcome is alive (the loop's decision
/// consumed it), and the function returns `ok` without touching them again.
///
/// `#[retryable]` calls it only so: at the loop's `break` with an `Ok` (an `Err` keeps its
/// lifetimes, so that one borrowing from the receiver still cannot reach `#[recover]`, which
/// gets the receiver), in a function whose receiver and arguments are all references, and not
/// when a breaker or a throttle keeps an earlier outcome across the next attempt (which the
/// borrow checker then refuses, rightly).
#[allow(
    unsafe_code,
    reason = "NLL problem case #3: see the module's documentation"
)]
#[inline]
pub unsafe fn returned_borrow<T, U>(ok: T, _: PhantomData<fn() -> U>) -> U {
    const {
        assert!(size_of::<T>() == size_of::<U>() && align_of::<T>() == align_of::<U>());
    }
    let ok = ManuallyDrop::new(ok);
    // SAFETY: the layouts are equal (checked above, and the types are one type but for
    // lifetimes, the caller's contract); `ok` is not dropped, so its value has one owner; the
    // lifetimes are the caller's to vouch for.
    unsafe { core::mem::transmute_copy::<T, U>(&*ok) }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Conn(u32);

    struct Pool {
        conn: Conn,
    }

    /// The shape the attribute writes: a loop of attempts, each on a reborrow, returning one.
    fn conn(pool: &mut Pool, fail: u32) -> Result<&mut Conn, u32> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let this = &mut *pool;
            let outcome: Result<&mut Conn, u32> = if attempt <= fail {
                Err(attempt)
            } else {
                this.conn.0 += 1;
                Ok(&mut this.conn)
            };
            match outcome {
                // SAFETY: the loop stops with this outcome; `pool` is not used again.
                #[allow(unsafe_code, reason = "the test of the shape")]
                Ok(c) => break Ok(unsafe { returned_borrow(c, PhantomData) }),
                Err(e) if e >= 3 => break Err(e),
                Err(_) => {}
            }
        }
    }

    #[test]
    fn the_last_attempts_borrow_is_returned() {
        let mut pool = Pool { conn: Conn(0) };
        let c = conn(&mut pool, 2).unwrap_or_else(|e| panic!("{e}"));
        c.0 += 10;
        assert_eq!(pool.conn.0, 11);
        assert_eq!(conn(&mut pool, 5).err(), Some(3));
    }
}
