//! The TLS provider of harrow's HTTPS requests (the models, a forge): rustls with ring,
//! installed for the process once, before the first client is built — reqwest is built
//! without a provider of its own, so none is chosen behind harrow's back.

/// Installs the provider if no one has yet; every client builder calls this first.
pub fn ready() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Another provider already installed for the process (a test harness's) is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
