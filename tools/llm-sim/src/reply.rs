//! The response helpers every handler uses: a response with llm-sim's
//! headers, a JSON answer, an API error, and reading a request's body.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::Value;

use crate::api::ApiError;
use crate::stream::{self, HttpBody};

pub fn respond(status: u16, ctype: &str, body: HttpBody) -> Response<HttpBody> {
    Response::builder()
        .status(status)
        .header("content-type", ctype)
        .header("x-simulated", "llm-sim")
        .body(body)
        .expect("valid response")
}

pub fn json_resp(status: u16, v: &Value) -> Response<HttpBody> {
    respond(status, "application/json", stream::full(v.to_string()))
}

pub fn error(e: &ApiError) -> Response<HttpBody> {
    json_resp(e.status, &e.body())
}

pub async fn body_bytes(req: Request<Incoming>) -> Result<Bytes, ApiError> {
    req.into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .map_err(|e| ApiError::bad(format!("reading body: {e}")))
}
