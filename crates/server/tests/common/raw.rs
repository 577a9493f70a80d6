//! gRPC calls written by hand over HTTP/2, for what no well-behaved client sends: bodies
//! trickled byte by byte, messages that are not valid protobuf.

use std::time::Duration;

use bytes::Bytes;

/// A SubmitProof stream under way: its body's sender, and the answer to come.
pub struct RawCall {
    pub body: h2::SendStream<Bytes>,
    pub response: h2::client::ResponseFuture,
}

/// Opens a connection and starts a call of `method` whose gRPC frame announces `announced`
/// bytes; `first` are the first bytes sent after the frame's prefix.
pub async fn start(
    addr: std::net::SocketAddr,
    method: &str,
    announced: u32,
    first: &[u8],
) -> RawCall {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(16 << 20)
        .initial_connection_window_size(16 << 20)
        .handshake(tcp)
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut client = client.ready().await.unwrap();
    let req = http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/cuzk.v1.ProvingEngine/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut body) = client.send_request(req, false).unwrap();
    let mut frame = vec![0u8];
    frame.extend_from_slice(&announced.to_be_bytes());
    frame.extend_from_slice(first);
    body.reserve_capacity(frame.len());
    body.send_data(Bytes::from(frame), false).unwrap();
    RawCall { body, response }
}

/// The grpc-status and grpc-message the call is answered with (headers or trailers).
pub async fn answer(response: h2::client::ResponseFuture, within: Duration) -> (i32, String) {
    let response = tokio::time::timeout(within, response)
        .await
        .expect("an answer in time")
        .unwrap();
    let header = |h: &http::HeaderMap, k: &str| h.get(k).map(|v| v.to_str().unwrap().to_string());
    if let Some(status) = header(response.headers(), "grpc-status") {
        let msg = header(response.headers(), "grpc-message").unwrap_or_default();
        return (status.parse().unwrap(), msg);
    }
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let _ = chunk;
    }
    let trailers = body.trailers().await.unwrap().unwrap_or_default();
    (
        header(&trailers, "grpc-status")
            .unwrap_or_default()
            .parse()
            .unwrap(),
        header(&trailers, "grpc-message").unwrap_or_default(),
    )
}

/// A whole message of `method`, sent at once; the answer's grpc-status and message.
pub async fn call(addr: std::net::SocketAddr, method: &str, message: &[u8]) -> (i32, String) {
    let mut c = start(addr, method, message.len() as u32, message).await;
    c.body.send_data(Bytes::new(), true).unwrap();
    answer(c.response, Duration::from_secs(10)).await
}
