//! Headless Chromium driven over the W3C WebDriver protocol: `chromedriver` started on a free
//! loopback port, one browser session, and the few commands the console's tests need (go to a
//! page, find an element, click, type, run a script, take a screenshot).
//!
//! The protocol is JSON over HTTP, spoken here with the tests' `reqwest`: a WebDriver crate
//! (fantoccini) would bring the `webdriver` crate and with it `icu_segmenter` and second copies
//! of `http`, `cookie` and `thiserror`, for these eight commands.
//!
//! Chromium and chromedriver are Debian's `chromium` and `chromium-driver`; without them the
//! driver does not start and says how to install them. chromedriver runs in a process group of
//! its own, with the browser it starts: dropping the [`Browser`] kills that group, whatever
//! the test's outcome. Every wait is bounded.

// Each browser test uses some of these, not all.
#![allow(dead_code)]

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The key of an element reference in WebDriver's answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long a single WebDriver command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// How to get the browser, said when it is missing.
const INSTALL: &str = "the console's browser tests need headless Chromium and its WebDriver: \
     install them with `apt-get install -y chromium chromium-driver` (.ci/run does)";

/// An element of the page.
#[derive(Debug, Clone)]
pub struct Element(String);

/// chromedriver and a browser session of it.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The group holds chromedriver and the browser it started (the test's own process).
        let group = self.driver.id() as libc::pid_t;
        // SAFETY: kill(2) with a process group id this test created; no memory is involved.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        let _ = self.driver.wait();
    }
}

/// The path of program `name` on `PATH`, if there is one.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A free port on 127.0.0.1 (free when asked: chromedriver binds it right after).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session with a `width` × `height` window.
    pub async fn start(width: u32, height: u32) -> Browser {
        let chromium = ["chromium", "chromium-browser", "google-chrome"]
            .into_iter()
            .find_map(on_path)
            .unwrap_or_else(|| panic!("no chromium on PATH: {INSTALL}"));
        let chromedriver =
            on_path("chromedriver").unwrap_or_else(|| panic!("no chromedriver on PATH: {INSTALL}"));
        let port = free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("chromedriver did not start ({e}): {INSTALL}"));
        let http = reqwest::Client::builder()
            .timeout(COMMAND_TIMEOUT)
            .build()
            .expect("an HTTP client");
        let mut browser = Browser {
            driver,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            http,
        };
        browser.wait_ready().await;
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--hide-scrollbars",
                         format!("--window-size={width},{height}")],
            },
        }}});
        let answer = browser.command("POST", "/session", capabilities).await;
        browser.session = answer["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {answer}"))
            .to_owned();
        browser
    }

    /// Waits, at most 30 s, for chromedriver to answer its status as ready.
    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.driver.try_wait() {
                panic!("chromedriver exited at start ({status}): {INSTALL}");
            }
            let answer = self.http.get(format!("{}/status", self.base)).send().await;
            if let Ok(answer) = answer
                && let Ok(text) = answer.text().await
                && let Ok(body) = serde_json::from_str::<Value>(&text)
                && body["value"]["ready"] == true
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not get ready in 30 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends a WebDriver command; its `value`. A WebDriver error panics with its message.
    async fn command(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self
                .http
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string()),
        };
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let status = response.status();
        let text = response
            .text()
            .await
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: no answer ({e})"));
        let answer: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: no JSON ({e}): {text}"));
        let value = answer["value"].clone();
        assert!(
            status.is_success(),
            "WebDriver {method} {path}: {} ({})",
            value["error"],
            value["message"]
        );
        value
    }

    fn session(&self, path: &str) -> String {
        format!("/session/{}{path}", self.session)
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.command("POST", &self.session("/url"), json!({"url": url}))
            .await;
    }

    /// The element `css` selects, waiting at most 20 s for it to appear.
    pub async fn find(&self, css: &str) -> Element {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let found = self
                .script(
                    "return document.querySelector(arguments[0]) !== null;",
                    json!([css]),
                )
                .await;
            if found == true {
                let value = self
                    .command(
                        "POST",
                        &self.session("/element"),
                        json!({"using": "css selector", "value": css}),
                    )
                    .await;
                let id = value[ELEMENT].as_str().expect("an element reference");
                return Element(id.to_owned());
            }
            assert!(Instant::now() < deadline, "no `{css}` on the page in 20 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits, at most 20 s, until nothing on the page matches `css`.
    pub async fn gone(&self, css: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let absent = "return document.querySelector(arguments[0]) === null;";
        while self.script(absent, json!([css])).await != true {
            assert!(
                Instant::now() < deadline,
                "`{css}` still on the page after 20 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the element `css` selects.
    pub async fn click(&self, css: &str) {
        let Element(id) = self.find(css).await;
        self.command(
            "POST",
            &self.session(&format!("/element/{id}/click")),
            json!({}),
        )
        .await;
    }

    /// Empties the field `css` selects and types `text` into it.
    pub async fn fill(&self, css: &str, text: &str) {
        let Element(id) = self.find(css).await;
        self.command(
            "POST",
            &self.session(&format!("/element/{id}/clear")),
            json!({}),
        )
        .await;
        self.command(
            "POST",
            &self.session(&format!("/element/{id}/value")),
            json!({"text": text}),
        )
        .await;
    }

    /// Runs `script` (a function body; its arguments in `arguments`) in the page; what it
    /// returns.
    pub async fn script(&self, script: &str, args: Value) -> Value {
        self.command(
            "POST",
            &self.session("/execute/sync"),
            json!({"script": script, "args": args}),
        )
        .await
    }

    /// The text of the element `css` selects (`null` when there is none).
    pub async fn text(&self, css: &str) -> Option<String> {
        let text = self
            .script(
                "const e = document.querySelector(arguments[0]); return e && e.textContent;",
                json!([css]),
            )
            .await;
        text.as_str().map(str::to_owned)
    }

    /// Waits, at most `limit`, for the text of `css` to satisfy `done`; that text. Panics
    /// saying `what` and the last text seen otherwise.
    pub async fn wait_text(
        &self,
        what: &str,
        css: &str,
        limit: Duration,
        done: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let text = self.text(css).await;
            if let Some(text) = &text
                && done(text)
            {
                return text.clone();
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {limit:?} waiting for {what}: `{css}` reads {text:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A PNG of the whole window.
    pub async fn screenshot(&self) -> Vec<u8> {
        let value = self
            .command("GET", &self.session("/screenshot"), Value::Null)
            .await;
        let text = value.as_str().expect("a base64 screenshot");
        base64_decode(text).expect("the screenshot is base64")
    }

    /// Ends the session (the browser closes); chromedriver is killed when dropped.
    pub async fn quit(self) {
        self.command("DELETE", &self.session(""), Value::Null).await;
    }
}

/// The bytes of standard base64 `text` (with or without padding); `None` if it is not base64.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let digits = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let mut bits = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            bits |= value(c)? << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        match chunk.len() {
            4 => out.extend_from_slice(&bytes[1..4]),
            3 => out.extend_from_slice(&bytes[1..3]),
            2 => out.push(bytes[1]),
            _ => return None,
        }
    }
    Some(out)
}

#[test]
fn base64_decodes_what_it_encodes() {
    assert_eq!(base64_decode("aGVsbG8="), Some(b"hello".to_vec()));
    assert_eq!(base64_decode("aGVsbG8h"), Some(b"hello!".to_vec()));
    assert_eq!(base64_decode("aGk"), Some(b"hi".to_vec()));
    assert_eq!(base64_decode("a"), None);
    assert_eq!(base64_decode("a*=="), None);
}
