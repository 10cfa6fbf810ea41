//! A minimal blocking HTTP/1.1 client for a model server on this machine:
//! one `POST` of JSON per connection (`Connection: close`), to a loopback
//! address only, plain HTTP (nothing leaves the machine, so no TLS), every
//! step within one deadline (the socket is closed when it passes), the
//! answer bounded in size. It reads `Content-Length` and chunked bodies.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A server URL whose host is a loopback address (`http://` only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopbackUrl {
    /// The host as written (`127.0.0.1`, `[::1]`, `localhost`), for `Host:`.
    pub host: String,
    /// The addresses to connect to (both loopbacks for `localhost`).
    pub addrs: Vec<IpAddr>,
    /// The port (80 when absent).
    pub port: u16,
    /// The path prefix, without a trailing slash (`/v1`, or empty).
    pub path: String,
}

fn refuse(url: &str, why: &str) -> String {
    format!(
        "{url:?} {why}: the server must be on this machine, at a loopback address (127.0.0.0/8, ::1 or localhost) \
         over http://"
    )
}

impl LoopbackUrl {
    /// Parses `http://HOST[:PORT][/PATH]`; any host but a loopback address
    /// (or `localhost`), user info, a query, a fragment or `https` is refused.
    pub fn parse(url: &str) -> Result<LoopbackUrl, String> {
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
                return Err(refuse(url, "uses https (a loopback server needs no TLS; write http://)"));
            }
            _ => return Err(refuse(url, "is not an http:// URL")),
        };
        if rest.contains(['?', '#', '@']) || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(refuse(url, "holds user info, a query, a fragment or spaces"));
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| refuse(url, "has an unclosed [ in its host"))?;
            (h, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        let port = match port {
            None => 80,
            Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| refuse(url, "has an invalid port"))?,
        };
        let addrs: Vec<IpAddr> = if host.eq_ignore_ascii_case("localhost") {
            // Not resolved: `localhost` means the loopback addresses themselves.
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)]
        } else {
            match host.parse::<IpAddr>() {
                Ok(ip) if ip.is_loopback() => vec![ip],
                Ok(_) => return Err(refuse(url, "is not a loopback address")),
                Err(_) => return Err(refuse(url, "names a host that is not localhost")),
            }
        };
        let host = if authority.starts_with('[') { format!("[{host}]") } else { host.to_owned() };
        Ok(LoopbackUrl { host, addrs, port, path: path.to_owned() })
    }
}

/// Posts `body` (JSON) to `url`'s path followed by `/endpoint`; returns the
/// status and the body, or why not (cannot connect, timeout, a body larger
/// than `max_body`, a malformed response).
pub fn post_json(
    url: &LoopbackUrl,
    endpoint: &str,
    body: &[u8],
    timeout: Duration,
    max_body: usize,
) -> Result<(u16, Vec<u8>), String> {
    let deadline = Instant::now() + timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    let timed_out = || format!("no answer within {} ms; the connection was closed", timeout.as_millis());
    let mut stream = None;
    let mut last_err = String::new();
    for ip in &url.addrs {
        if left().is_zero() {
            return Err(timed_out());
        }
        match TcpStream::connect_timeout(&SocketAddr::new(*ip, url.port), left()) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_err = format!("cannot connect to {}:{}: {e}", url.host, url.port),
        }
    }
    let mut stream = stream.ok_or(last_err)?;
    let path = format!("{}/{}", url.path, endpoint.trim_start_matches('/'));
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: engram\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        url.host,
        url.port,
        body.len()
    );
    let io = |e: std::io::Error| {
        if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
            timed_out()
        } else {
            format!("the connection failed: {e}")
        }
    };
    stream.set_write_timeout(Some(left().max(Duration::from_millis(1)))).map_err(io)?;
    stream.write_all(head.as_bytes()).map_err(io)?;
    stream.write_all(body).map_err(io)?;
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(done) = complete(&buf)? {
            return Ok(done);
        }
        if left().is_zero() {
            return Err(timed_out());
        }
        stream.set_read_timeout(Some(left().max(Duration::from_millis(1)))).map_err(io)?;
        match stream.read(&mut chunk) {
            Ok(0) => return finish_at_eof(&buf),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > max_body + 64 * 1024 {
                    return Err(format!("the answer is larger than {max_body} bytes; the connection was closed"));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
}

/// The head of a response: status, where the body starts, how it is framed.
struct Head {
    status: u16,
    body_at: usize,
    length: Option<usize>,
    chunked: bool,
}

fn head(buf: &[u8]) -> Result<Option<Head>, String> {
    let Some(end) = memchr::memmem::find(buf, b"\r\n\r\n") else {
        if buf.len() > 64 * 1024 {
            return Err("the server's response head is too large".into());
        }
        return Ok(None);
    };
    let text = std::str::from_utf8(&buf[..end]).map_err(|_| "the server's response head is not text".to_owned())?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (version, code) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1 response: {status_line:?}"));
    }
    let status = code.parse::<u16>().map_err(|_| format!("a response without a status: {status_line:?}"))?;
    let (mut length, mut chunked) = (None, false);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| format!("a bad Content-Length: {value:?}"))?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") && value.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        }
    }
    Ok(Some(Head { status, body_at: end + 4, length, chunked }))
}

/// The response, if `buf` holds all of it (by its length or its last chunk).
fn complete(buf: &[u8]) -> Result<Option<(u16, Vec<u8>)>, String> {
    let Some(h) = head(buf)? else { return Ok(None) };
    let body = &buf[h.body_at..];
    if h.chunked {
        return Ok(dechunk(body)?.map(|b| (h.status, b)));
    }
    match h.length {
        Some(n) if body.len() >= n => Ok(Some((h.status, body[..n].to_vec()))),
        _ => Ok(None),
    }
}

/// The response when the server closed the connection.
fn finish_at_eof(buf: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let Some(h) = head(buf)? else {
        return Err("the server closed the connection without a response".into());
    };
    if h.chunked || h.length.is_some() {
        return Err("the server closed the connection before the end of its answer".into());
    }
    Ok((h.status, buf[h.body_at..].to_vec()))
}

/// The body of a chunked transfer, if it is complete.
fn dechunk(mut body: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = memchr::memmem::find(body, b"\r\n") else { return Ok(None) };
        let size_text = std::str::from_utf8(&body[..eol]).map_err(|_| "a bad chunk size".to_owned())?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| format!("a bad chunk size: {size_text:?}"))?;
        let data = &body[eol + 2..];
        if size == 0 {
            return Ok(Some(out));
        }
        if data.len() < size + 2 {
            return Ok(None);
        }
        out.extend_from_slice(&data[..size]);
        body = &data[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn url(port: u16) -> LoopbackUrl {
        LoopbackUrl::parse(&format!("http://127.0.0.1:{port}/v1")).unwrap()
    }

    /// A one-connection server answering `answer` after reading the request.
    fn serve(answer: Vec<u8>, pause: Duration) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 4096];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") || !req.ends_with(b"}") {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                req.extend_from_slice(&buf[..n]);
            }
            std::thread::sleep(pause);
            let _ = s.write_all(&answer);
            req
        });
        (port, t)
    }

    #[test]
    fn urls() {
        let u = LoopbackUrl::parse("http://localhost:11434/v1/").unwrap();
        assert_eq!((u.port, u.path.as_str(), u.addrs.len()), (11434, "/v1", 2));
        let u = LoopbackUrl::parse("http://[::1]:8080").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("[::1]", 8080, ""));
        assert_eq!(LoopbackUrl::parse("http://127.0.0.1").unwrap().port, 80);
        for bad in ["http://8.8.8.8/", "https://localhost/", "ftp://127.0.0.1/", "http://127.0.0.1:0/", "http://[::1/"]
        {
            assert!(LoopbackUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_response_with_a_length_and_a_chunked_one() {
        let (port, t) = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}".to_vec(), Duration::ZERO);
        let (status, body) = post_json(&url(port), "chat/completions", b"{}", Duration::from_secs(5), 1 << 20).unwrap();
        assert_eq!((status, body.as_slice()), (200, b"{\"a\":1}".as_slice()));
        let req = String::from_utf8(t.join().unwrap()).unwrap();
        assert!(req.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"), "{req}");
        assert!(req.contains("Content-Length: 2\r\n") && req.ends_with("{}"), "{req}");

        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n".to_vec();
        let (port, _t) = serve(chunked, Duration::ZERO);
        let (_, body) = post_json(&url(port), "x", b"{}", Duration::from_secs(5), 1 << 20).unwrap();
        assert_eq!(body, b"{\"a\":1}");

        let (port, _t) = serve(b"HTTP/1.0 503 Busy\r\n\r\nbusy".to_vec(), Duration::ZERO);
        let (status, body) = post_json(&url(port), "x", b"{}", Duration::from_secs(5), 1 << 20).unwrap();
        assert_eq!((status, body.as_slice()), (503, b"busy".as_slice()));
    }

    #[test]
    fn a_slow_server_a_large_answer_and_a_closed_port_fail() {
        let (port, _t) = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".to_vec(), Duration::from_secs(3));
        let start = Instant::now();
        let err = post_json(&url(port), "x", b"{}", Duration::from_millis(300), 1 << 20).unwrap_err();
        assert!(err.contains("no answer within 300 ms"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(2));

        let mut big = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        big.extend(std::iter::repeat_n(b'x', 300_000));
        let (port, _t) = serve(big, Duration::ZERO);
        let err = post_json(&url(port), "x", b"{}", Duration::from_secs(5), 100_000).unwrap_err();
        assert!(err.contains("larger than"), "{err}");

        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let err = post_json(&url(port), "x", b"{}", Duration::from_secs(2), 1 << 20).unwrap_err();
        assert!(err.contains("cannot connect"), "{err}");

        let (port, _t) = serve(b"garbage\r\n\r\n".to_vec(), Duration::ZERO);
        let err = post_json(&url(port), "x", b"{}", Duration::from_secs(2), 1 << 20).unwrap_err();
        assert!(err.contains("not an HTTP/1 response"), "{err}");
    }
}
