//! Tests of the client, with one-shot TCP servers scripted per test.

use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header;

use super::*;

#[test]
fn stream_state_stamps_chunks_and_ends_at_done() {
    let t0 = Instant::now();
    let mut s = Sample::new(0, t0, t0);
    s.sent = t0;
    let mut st = StreamState::default();
    let a = t0 + Duration::from_millis(5);
    st.feed(
        b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n",
        a,
        &mut s,
    )
    .unwrap();
    assert_eq!(s.chunks.len(), 1, "the role chunk is not a token");
    assert_eq!(s.chunks[0].at_us, 5000);
    let b = t0 + Duration::from_millis(9);
    st.feed(
        b"data: {\"choices\":[{\"text\":\"x\",\"finish_reason\":\"length\"}]}\n\ndata: [DO",
        b,
        &mut s,
    )
    .unwrap();
    let d = t0 + Duration::from_millis(10);
    st.feed(b"NE]\n\n", d, &mut s).unwrap();
    st.finish(&mut s);
    assert!(s.error.is_none());
    assert_eq!(s.done, d);
    assert_eq!(s.finish_reason.as_deref(), Some("length"));
}

#[test]
fn cumulative_text_counts_only_what_grew() {
    // SGLang /generate: each chunk's text is the whole text so far.
    let t0 = Instant::now();
    let mut s = Sample::new(0, t0, t0);
    let mut st = StreamState::new(true);
    st.feed(
        b"data: {\"text\":\"ab\",\"meta_info\":{\"completion_tokens\":1}}\n\n\
          data: {\"text\":\"ab\",\"meta_info\":{\"completion_tokens\":1}}\n\n\
          data: {\"text\":\"abcde\",\"meta_info\":{\"completion_tokens\":3}}\n\n",
        t0,
        &mut s,
    )
    .unwrap();
    let lens: Vec<u32> = s.chunks.iter().map(|c| c.text_len).collect();
    assert_eq!(lens, [2, 3], "a chunk that added nothing is no token");
    assert_eq!(s.chunks[1].cum_tokens, Some(3));
}

#[test]
fn stream_without_done_or_reason_is_cut() {
    let t0 = Instant::now();
    let mut s = Sample::new(0, t0, t0);
    let mut st = StreamState::default();
    st.feed(b"data: {\"choices\":[{\"text\":\"x\"}]}\n\n", t0, &mut s)
        .unwrap();
    st.finish(&mut s);
    assert_eq!(s.error, Some(ErrorKind::Cut));
}

#[test]
fn malformed_and_error_chunks_end_the_request() {
    let t0 = Instant::now();
    let mut s = Sample::new(0, t0, t0);
    let mut st = StreamState::default();
    let e = st.feed(b"data: {oops\n\n", t0, &mut s).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    let mut st = StreamState::default();
    let e = st
        .feed(b"data: {\"error\":{\"message\":\"boom\"}}\n\n", t0, &mut s)
        .unwrap_err();
    assert_eq!(e, RequestError::new(ErrorKind::StreamError, "boom"));
    assert_eq!(e.to_string(), "stream_error: boom");
}

/// The design's claim: a chunk's time is when it reached the socket,
/// even when the event loop is busy elsewhere at that moment.
///
/// Ordered by signals, not by sleeps, so a loaded machine cannot reorder
/// it: the hog starts once the server holds the request, and holds the
/// only runtime thread until 150 ms after the first chunk was written.
#[test]
#[cfg(target_os = "linux")] // kernel receive stamps
fn a_blocked_event_loop_does_not_delay_chunk_timestamps() {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (got_request, request_held) = tokio::sync::oneshot::channel::<()>();
    let (wrote, written) = std::sync::mpsc::channel::<Instant>();
    let server = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = c.read(&mut buf).unwrap();
        let chunk = |c: &mut std::net::TcpStream, s: &str| {
            write!(c, "{:x}\r\n{s}\r\n", s.len()).unwrap();
        };
        c.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            .unwrap();
        let _ = got_request.send(());
        // Give the hog time to take the runtime thread.
        std::thread::sleep(Duration::from_millis(20));
        let before = Instant::now();
        chunk(&mut c, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n");
        wrote.send(before).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        chunk(&mut c, "data: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n");
        c.write_all(b"0\r\n\r\n").unwrap();
    });
    let rt = runtime(1).unwrap();
    let d = Duration::from_secs(10);
    let t = Target::new(
        &format!("http://{addr}/v1/completions"),
        None,
        true,
        d,
        d,
        d,
    )
    .unwrap();
    // The kernel turns stamping on a moment after the first ask.
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    let mut s = Sample::new(0, t0, t0);
    let (first_written, hog_end) = rt.block_on(async {
        let hog = tokio::spawn(async move {
            request_held.await.unwrap();
            // From here the only runtime thread is blocked: the client
            // cannot read the first chunk until the hog lets go.
            let w = written.recv_timeout(Duration::from_secs(20)).unwrap();
            std::thread::sleep(Duration::from_millis(150));
            (w, Instant::now())
        });
        let mut conn = None;
        execute(&t, &mut conn, Bytes::from_static(b"{}"), &mut s).await;
        hog.await.unwrap()
    });
    server.join().unwrap();
    assert!(s.error.is_none(), "{:?} {:?}", s.error, s.detail);
    assert_eq!(s.chunks.len(), 2);
    let first = s.sent + Duration::from_micros(s.chunks[0].at_us as u64);
    assert!(
        first >= first_written,
        "first chunk stamped {:?} before it was written",
        first_written - first
    );
    assert!(
        first + Duration::from_millis(100) <= hog_end,
        "first chunk stamped {:?} after it was written, only {:?} before the loop let go",
        first - first_written,
        hog_end.saturating_duration_since(first)
    );
    assert!(s.chunks[1].at_us >= s.chunks[0].at_us + 290_000);
}

#[test]
fn a_stream_left_open_after_done_completes_without_waiting_for_the_idle_timeout() {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = c.read(&mut buf).unwrap();
        let body = "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
        write!(
            c,
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n",
            body.len()
        )
        .unwrap();
        // Never the terminating chunk; hold the connection open.
        std::thread::sleep(Duration::from_secs(2));
    });
    let rt = runtime(1).unwrap();
    let long = Duration::from_secs(30);
    let t = Target::new(&format!("http://{addr}/x"), None, true, long, long, long).unwrap();
    let t0 = Instant::now();
    let mut s = Sample::new(0, t0, t0);
    let mut conn = None;
    rt.block_on(execute(&t, &mut conn, Bytes::from_static(b"{}"), &mut s));
    assert!(s.error.is_none(), "{:?}", s.detail);
    assert_eq!(s.chunks.len(), 1);
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    assert!(
        conn.is_none(),
        "an unfinished body cannot carry another request"
    );
    server.join().unwrap();
}

#[test]
fn target_parses_urls_and_hides_the_key() {
    let d = Duration::from_secs(1);
    let t = Target::new(
        "http://127.0.0.1:8000/v1/completions",
        Some("Bearer sk-secret"),
        true,
        d,
        d,
        d,
    )
    .unwrap();
    assert_eq!(t.path, "/v1/completions");
    assert_eq!(t.headers[header::HOST], "127.0.0.1:8000");
    assert!(t.headers[header::AUTHORIZATION].is_sensitive());
    assert!(!format!("{:?}", t.headers).contains("sk-secret"));
    let t = Target::new("http://[::1]:9/x", None, true, d, d, d).unwrap();
    assert_eq!(t.addrs[0].port(), 9);
    assert!(Target::new("https://a/x", None, true, d, d, d).is_err());
}
