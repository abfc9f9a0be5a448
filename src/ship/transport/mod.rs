//! git's network transports, harrow's own: smart HTTP(S) on harrow's HTTP client (rustls, with
//! the roots every other request of harrow's trusts), and SSH through the system's `ssh` (the
//! keys, agent, configuration and `known_hosts` the user's own git uses).
//!
//! libgit2 is built without OpenSSL and libssh2. Starting OpenSSL (`SSL_CTX_new`, at libgit2's
//! first call in every process) cost about 8 M instructions, and loading libssl and libcrypto
//! (bound at load, every symbol) about 4 M more per process image, in every harrow process
//! whether or not it ever pushed; it also made harrow start again to keep OpenSSL from reading
//! the whole CA bundle.

mod body;
mod http;
mod ssh;

use super::credentials::Credentials;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, Once};

thread_local! {
    /// The credentials of the push or clone this thread is making: libgit2 makes a transport
    /// on the thread that asked for the connection, and the factory finds them here.
    static OFFERING: RefCell<Option<Arc<Mutex<Credentials>>>> = const { RefCell::new(None) };
}

/// Puts the thread's previous credentials back, on return and on unwinding alike.
struct Restore(Option<Arc<Mutex<Credentials>>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let before = self.0.take();
        OFFERING.with(|o| *o.borrow_mut() = before);
    }
}

/// Runs `f` (git2 calls that may connect to a remote) with `credentials` offered to an
/// HTTP(S) server that asks for them.
pub fn offering<T>(credentials: &Arc<Mutex<Credentials>>, f: impl FnOnce() -> T) -> T {
    ready();
    let _restore = Restore(OFFERING.with(|o| o.replace(Some(credentials.clone()))));
    f()
}

fn offered() -> Result<Arc<Mutex<Credentials>>, git2::Error> {
    OFFERING.with(|o| o.borrow().clone()).ok_or_else(|| {
        git2::Error::from_str("harrow connects to a remote only to push or to clone")
    })
}

/// Registers the transports with libgit2, once, before the first connection.
#[allow(unsafe_code)]
fn ready() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for scheme in ["http", "https"] {
            // SAFETY: git2 asks that registering a transport not race with the making of
            // another. Every connection harrow makes goes through `offering`, which comes here
            // first; `Once` runs this one time and orders every later connection after it.
            let made = unsafe {
                git2::transport::register(scheme, |remote| http::transport(remote, offered()?))
            };
            debug_assert!(made.is_ok(), "{made:?}");
        }
        // libgit2 names a scheme's transport by `scheme://`; `ssh://`'s also carries git's
        // `user@host:path` form.
        for scheme in ["ssh", "ssh+git", "git+ssh"] {
            // SAFETY: as above.
            let made = unsafe { git2::transport::register(scheme, ssh::transport) };
            debug_assert!(made.is_ok(), "{made:?}");
        }
    });
}
