//! ShopLite as a running shop: the cart-total form (`GET /?price=…&qty=…&coupon=…`) and
//! `GET /api/health`, which names the service and the exact commit this binary was built
//! from. The commit is embedded at build time from `COMMIT`, which `git archive` fills in
//! (`export-subst` in `.gitattributes`): a build from anything but an archive of one commit
//! says `unknown`, so it can never pass a recorder's check for a commit.
//!
//! Standard library only, so the desk's sandbox builds it offline. One thread per
//! connection, requests of at most 8 KiB, every echoed value HTML-escaped.
//!
//! Usage: `shoplite --addr 127.0.0.1:PORT [--exit-with-parent]` (port 0 picks one; the bound
//! address is printed). With `--exit-with-parent` the shop stops when the process that
//! started it is gone (the desk's deployer starts its instances so).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// Filled in by `git archive` (the `$Format:%H$` placeholder becomes the commit).
const COMMIT_FILE: &str = include_str!("../COMMIT");
/// Largest request head read.
const MAX_REQUEST: u64 = 8 * 1024;

/// The commit this binary was built from, or `unknown`.
fn built_from() -> &'static str {
    commit_in(COMMIT_FILE)
}

/// The commit a `COMMIT` file names, or `unknown` (the placeholder, or anything else).
fn commit_in(file: &str) -> &str {
    let commit = file.trim();
    if commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        commit
    } else {
        "unknown"
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut addr = "127.0.0.1:0".to_owned();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => match args.next() {
                Some(value) => addr = value,
                None => usage(),
            },
            "--exit-with-parent" => exit_with_parent(),
            _ => usage(),
        }
    }
    let listener = match TcpListener::bind(&addr) {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("error: cannot listen on {addr}: {error}");
            std::process::exit(1);
        }
    };
    let instance = instance_id();
    match listener.local_addr() {
        Ok(bound) => println!(
            "shoplite listening on http://{bound} (commit {})",
            built_from()
        ),
        Err(error) => eprintln!("warning: cannot read the bound address: {error}"),
    }
    for stream in listener.incoming().flatten() {
        let instance = instance.clone();
        std::thread::spawn(move || {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
            handle(stream, &instance);
        });
    }
}

fn usage() -> ! {
    eprintln!("usage: shoplite --addr HOST:PORT [--exit-with-parent]");
    std::process::exit(2);
}

/// Stops this process once its parent is gone (it was re-parented).
fn exit_with_parent() {
    #[cfg(unix)]
    {
        let parent = std::os::unix::process::parent_id();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            if std::os::unix::process::parent_id() != parent {
                std::process::exit(0);
            }
        });
    }
}

/// An id for this process: the recorder checks that the public address answers with the
/// same instance as the immutable one.
fn instance_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("shoplite-{:x}-{:x}", std::process::id(), nanos)
}

fn handle(stream: TcpStream, instance: &str) {
    let Ok(reader) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reader.take(MAX_REQUEST));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // The rest of the head is read and ignored (no body is ever needed).
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && !line.trim().is_empty() {
        line.clear();
    }
    let (status, content_type, body) = respond(&request_line, instance);
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nContent-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; form-action 'self'\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

/// The answer to one request line: status, content type, body.
fn respond(request_line: &str, instance: &str) -> (&'static str, &'static str, String) {
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return (
            "400 Bad Request",
            "text/plain; charset=utf-8",
            "bad request\n".into(),
        );
    };
    if method != "GET" {
        return (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".into(),
        );
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match path {
        "/api/health" => (
            "200 OK",
            "application/json",
            format!(
                "{{\"service\":\"shoplite\",\"version\":\"{}\",\"commit\":\"{}\",\"storage\":\"none\",\"status\":\"ok\",\"database_reachable\":false,\"schema_version\":null,\"instance\":\"{instance}\"}}\n",
                env!("CARGO_PKG_VERSION"),
                built_from()
            ),
        ),
        "/" => ("200 OK", "text/html; charset=utf-8", page(query)),
        // Served as it is in the tree: the desk's recorder checks it against the build's
        // asset manifest.
        "/static/shop.css" => (
            "200 OK",
            "text/css; charset=utf-8",
            include_str!("../static/shop.css").to_owned(),
        ),
        _ => ("404 Not Found", "text/plain; charset=utf-8", "not found\n".into()),
    }
}

/// The value of `name` in a query string, percent-decoded (`+` is a space).
fn field(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| decode(value))
    })
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high * 16 + low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(byte: u8) -> Option<u8> {
    char::from(byte)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The shop page: the form, and the payable total when the form was sent.
fn page(query: &str) -> String {
    let price = field(query, "price");
    let qty = field(query, "qty");
    let coupon = field(query, "coupon");
    let result = match (&price, &qty) {
        (Some(price), Some(qty)) => {
            match shoplite::quote_form(price, qty, coupon.as_deref().unwrap_or("")) {
                Ok(quote) => format!(
                    "<p id=\"payable\">Payable: <strong>{}</strong> (subtotal {}, discount {})</p>",
                    escape(&quote.payable.to_string()),
                    escape(&quote.subtotal.to_string()),
                    escape(&quote.discount.to_string())
                ),
                Err(error) => format!(
                    "<p id=\"error\" role=\"alert\">{}</p>",
                    escape(&error.to_string())
                ),
            }
        }
        _ => String::new(),
    };
    let value = |v: &Option<String>, default: &str| escape(v.as_deref().unwrap_or(default));
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>ShopLite</title></head><body><main><h1>ShopLite</h1><p>Built from commit <code>{}</code>.</p><form method=\"get\"><label>Price (₹) <input name=\"price\" value=\"{}\" inputmode=\"decimal\"></label> <label>Quantity <input name=\"qty\" value=\"{}\" inputmode=\"numeric\"></label> <label>Coupon <input name=\"coupon\" value=\"{}\"></label> <button type=\"submit\">Total</button></form>{result}</main></body></html>\n",
        built_from(),
        value(&price, "200"),
        value(&qty, "1"),
        value(&coupon, "")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_names_the_service_and_a_commit_or_unknown() {
        let (status, kind, body) = respond("GET /api/health HTTP/1.1", "shoplite-1");
        assert_eq!((status, kind), ("200 OK", "application/json"));
        assert!(body.contains("\"service\":\"shoplite\""), "{body}");
        assert!(body.contains("\"instance\":\"shoplite-1\""), "{body}");
        let commit = format!("\"commit\":\"{}\"", built_from());
        assert!(body.contains(&commit), "{body}");
        // From a working tree the placeholder is no commit; from an archive it is one.
        assert_eq!(commit_in("$Format:%H$\n"), "unknown");
        assert_eq!(commit_in("not a commit"), "unknown");
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(commit_in(&format!("{sha}\n")), sha);
    }

    #[test]
    fn the_form_shows_the_payable_total_and_escapes_what_it_echoes() {
        let (_, _, body) = respond("GET /?price=200&qty=1&coupon=SAVE300 HTTP/1.1", "i");
        assert!(body.contains("id=\"payable\""), "{body}");
        let (_, _, body) = respond(
            "GET /?price=%3Cscript%3Ealert(1)%3C%2Fscript%3E&qty=1 HTTP/1.1",
            "i",
        );
        assert!(!body.contains("<script>"), "{body}");
        assert!(body.contains("&lt;script&gt;"), "{body}");
    }

    #[test]
    fn only_get_on_known_paths() {
        assert_eq!(respond("POST / HTTP/1.1", "i").0, "405 Method Not Allowed");
        assert_eq!(respond("GET /admin HTTP/1.1", "i").0, "404 Not Found");
        assert_eq!(respond("", "i").0, "400 Bad Request");
        assert_eq!(decode("a+b%20c%zz%4"), "a b c%zz%4");
    }
}
