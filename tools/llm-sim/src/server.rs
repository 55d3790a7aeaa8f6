//! The accept loop: one HTTP/1.1 connection per accepted socket, every
//! request answered by routes.rs (routing per personality), which hands
//! generations to generation.rs and native.rs.

use std::convert::Infallible;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::state::State;
use crate::wire::{Wire, WireIo};

/// Serve connections until the process exits.
pub async fn serve(listener: TcpListener, state: Arc<State>) {
    // Kernel receive stamps on from the start (see sweepkit::rxstamp): the
    // kernel turns them on a moment after the first socket asks.
    let _stamping = sweepkit::rxstamp::keep_on();
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors and the like: back off, keep serving.
                sweepkit::diag::verbatim(&format!("llm-sim: warning: accept: {e}"));
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        state.metrics.connections.fetch_add(1, Relaxed);
        let state = state.clone();
        tokio::spawn(async move {
            let wire = Wire::new();
            let io = WireIo::new(tcp, wire.clone());
            let svc = hyper::service::service_fn(move |req| {
                let (state, wire) = (state.clone(), wire.clone());
                async move { Ok::<_, Infallible>(crate::routes::handle(state, req, wire).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(io), svc)
                .await;
        });
    }
}
