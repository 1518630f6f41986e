//! Owners add and change projects on the desk (the crew page's form, posted to the desk's
//! `project` server function) as they do with `r2r project add|edit`: the same checks, each
//! refusal naming its field; only a signed-in owner with this session's CSRF token may; a
//! crew token may not; hostile text is shown as text; a plain form post (no JavaScript)
//! comes back to the crew page.

use crate::common;

use common::{sign_in, OWNER, PASSWORD};
use domain::Role;
use serde_json::Value;

async fn post(
    client: &reqwest::Client,
    base: &str,
    cookie: Option<&str>,
    bearer: Option<&str>,
    fields: &[(&str, &str)],
) -> (u16, String) {
    let mut request = client.post(format!("{base}/desk/fn/project")).form(fields);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_add_and_change_projects_on_the_desk_with_the_clis_checks() {
    let desk = common::owner_desk(&[]);
    let base = desk.server.base.clone();
    let dir = tempfile::tempdir().unwrap();
    let (bare, _work) = common::local_forge_with(dir.path(), "ledgerly", |work| {
        common::write(
            work,
            "ledgerly/__init__.py",
            "def total(xs):\n    return sum(xs)\n",
        );
    })
    .await;
    let forge = bare.display().to_string();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let (cookie, csrf) = sign_in(&client, &base, OWNER, PASSWORD).await;
    let hostile_name = "<script>alert(1)</script> Ledgerly";
    let add = [
        ("csrf", csrf.as_str()),
        ("mode", "add"),
        ("id", "ledgerly"),
        ("name", hostile_name),
        ("components", "ledgerly"),
        ("forge", forge.as_str()),
        ("profile", "python"),
        ("fix_paths", "ledgerly/"),
    ];

    // Not an owner, or not this session's form: refused, nothing written.
    let reproducer = &desk.tokens[&Role::Reproducer];
    let (status, _) = post(&client, &base, None, Some(reproducer), &add).await;
    assert_eq!(status, 403, "a crew token is not an owner");
    let (status, _) = post(&client, &base, None, None, &add).await;
    assert_eq!(status, 401);
    let mut forged = add;
    forged[0] = ("csrf", "0000");
    let (status, answer) = post(&client, &base, Some(&cookie), None, &forged).await;
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("invalid_csrf"), "{answer}");

    // Each wrong field is refused with its name.
    for (field, value, says) in [
        ("forge", "relative/path.git", "forge"),
        ("forge", "/nonexistent/repo.git", "forge_path"),
        ("id", "Not An Id", "id"),
        ("profile", "cobol", "profile"),
        ("components", "default-component,\u{202e}evil", "components"),
        ("fix_paths", "../outside/", "fix_allowed_paths"),
        ("mode", "delete", "mode"),
        ("crew", "maybe", "crew"),
        ("github", "octo-org/shop", "github"),
        ("github", "../../etc", "github"),
        ("github", "octo\u{0}/x", "github"),
        ("deploy", "Shop Lite", "deploy"),
        ("deploy", "ledgerly", "deploy"),
        ("launch_port", "99999", "launch_port"),
        ("launch_args", "--addr\u{7f}", "launch_args"),
        ("launch_env", "R2R_OWNER_SESSION_KEY=stolen", "launch_env"),
        ("launch_env", "LD_PRELOAD=/tmp/x.so", "launch_env"),
        ("launch_assets", "../../etc", "launch_assets"),
        ("launch_assets", ".git", "launch_assets"),
    ] {
        let mut wrong = add.to_vec();
        match wrong.iter_mut().find(|(k, _)| *k == field) {
            Some(pair) => pair.1 = value,
            None => wrong.push((field, value)),
        }
        let (status, answer) = post(&client, &base, Some(&cookie), None, &wrong).await;
        assert_eq!(status, 400, "{field}={value:?}: {answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["code"], "invalid_project", "{answer}");
        assert!(
            answer["message"].as_str().unwrap().starts_with(says),
            "{field}={value:?}: {answer}"
        );
    }

    // Added, then listed on the crew page with the hostile name shown as text.
    let (status, answer) = post(&client, &base, Some(&cookie), None, &add).await;
    assert!(status < 400, "{status} {answer}");
    let (status, answer) = post(&client, &base, Some(&cookie), None, &add).await;
    assert_eq!(status, 409, "a second add is refused: {answer}");
    let response = client
        .get(format!("{base}/desk/crew"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["referrer-policy"],
        "same-origin",
        "a plain form post must say where it came from, to this desk only"
    );
    let page = response.text().await.unwrap();
    assert!(page.contains("data-project=\"ledgerly\""), "{page}");
    assert!(!page.contains("<script>alert(1)"), "the name is escaped");
    assert!(page.contains("&lt;script&gt;alert(1)"), "and shown");
    assert!(
        page.contains(&format!("by {OWNER}")),
        "who changed it is shown"
    );
    assert!(
        page.contains("data-testid=\"save-project\""),
        "the page carries the form"
    );

    // Changed: only the fields given; the environment's project is not changed here.
    let (status, answer) = post(
        &client,
        &base,
        Some(&cookie),
        None,
        &[
            ("csrf", csrf.as_str()),
            ("mode", "edit"),
            ("id", "ledgerly"),
            ("name", "Ledgerly"),
            ("crew", "off"),
        ],
    )
    .await;
    assert!(status < 400, "{status} {answer}");
    let listed = common::r2r_with_env_file(&desk.env_file)
        .args(["project", "list"])
        .env("DATABASE_URL", &desk.database_url)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let row = listed
        .lines()
        .find(|l| l.starts_with("ledgerly"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        row.contains("python") && row.contains(" off ") && row.contains("ledgerly/"),
        "{row}"
    );

    // The released program's start, from the form: stored as given; `none` takes the
    // arguments away, an empty field keeps what is there.
    for fields in [
        &[
            ("launch_port", "3000"),
            ("launch_args", "serve --port {port}"),
            ("launch_env", "TZ=UTC; LEDGER_MODE=demo"),
            ("launch_assets", "web/public"),
        ][..],
        &[("launch_args", "none"), ("launch_port", "")][..],
    ] {
        let mut edit = vec![
            ("csrf", csrf.as_str()),
            ("mode", "edit"),
            ("id", "ledgerly"),
        ];
        edit.extend_from_slice(fields);
        let (status, answer) = post(&client, &base, Some(&cookie), None, &edit).await;
        assert!(status < 400, "{status} {answer}");
    }
    let stored = common::stored_project(&desk.database_url, "ledgerly").await;
    assert_eq!(stored["launch"]["port"], 3000, "{stored}");
    assert_eq!(stored["launch"]["args"], serde_json::json!([]), "{stored}");
    assert_eq!(
        stored["launch"]["env"],
        serde_json::json!([["TZ", "UTC"], ["LEDGER_MODE", "demo"]]),
        "{stored}"
    );
    assert_eq!(stored["launch"]["assets"], "web/public", "{stored}");
    let (status, answer) = post(
        &client,
        &base,
        Some(&cookie),
        None,
        &[
            ("csrf", csrf.as_str()),
            ("mode", "edit"),
            ("id", "default"),
            ("name", "Mine now"),
        ],
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("in its variables"), "{answer}");

    // Without JavaScript the browser posts the form and is sent back to the crew page.
    let (status, _) = {
        let response = client
            .post(format!("{base}/desk/fn/project"))
            .header("cookie", &cookie)
            .header("accept", "text/html")
            .header("referer", format!("{base}/desk/crew"))
            .form(&[
                ("csrf", csrf.as_str()),
                ("mode", "edit"),
                ("id", "ledgerly"),
                ("crew", "on"),
            ])
            .send()
            .await
            .unwrap();
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        assert!(location.ends_with("/desk/crew"), "{location}");
        (response.status().as_u16(), location)
    };
    assert_eq!(status, 302);

    // A refusal that came back in the address is shown in the desk's own words: anyone can
    // write an address.
    let err = {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE.encode(
            r#"{"code":"invalid_project","message":"Your session ended: sign in at https://evil.example"}"#,
        )
    };
    let shown = client
        .get(format!(
            "{base}/desk/crew?__path=/desk/fn/project&__err={err}"
        ))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        shown.contains("project-problem")
            && shown.contains("The project was not saved")
            && !shown.contains("evil.example"),
        "{shown}"
    );
}

/// `r2r project detect` reads a repository's tree at a commit (never its work tree, never
/// running it) and says what the desk makes of it; a later commit that changes the
/// ecosystem is read as such, a bad ref or path is named, and a tree no profile fits exits
/// non-zero with the reason.
#[tokio::test]
async fn project_detect_reads_a_commits_tree_and_names_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, work) = common::local_forge_with(dir.path(), "ledger", |work| {
        std::fs::create_dir_all(work.join("src/ledger")).unwrap();
        std::fs::create_dir_all(work.join("tests")).unwrap();
        std::fs::write(
            work.join("pyproject.toml"),
            "[project]\nname = \"ledger\"\nrequires-python = \">=3.9\"\n",
        )
        .unwrap();
        std::fs::write(work.join("src/ledger/__init__.py"), "").unwrap();
        std::fs::write(work.join("tests/test_ledger.py"), "").unwrap();
        std::fs::write(work.join("uv.lock"), "").unwrap();
    })
    .await;
    let detect = |reference: &str, json: bool| {
        let mut command = common::r2r(dir.path());
        command
            .args(["project", "detect", "--repository"])
            .arg(&bare)
            .arg(format!("--ref={reference}"));
        if json {
            command.arg("--json");
        }
        command.output().unwrap()
    };
    let first = detect("main", true);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let found: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(found["profile"], "python");
    assert_eq!(found["lockfile"], "uv.lock");
    assert_eq!(found["fix_paths"], serde_json::json!(["src/ledger/"]));
    assert_eq!(found["test_folders"], serde_json::json!(["tests/"]));
    assert_eq!(found["commit"].as_str().unwrap().len(), 40);
    // What is in the work tree but not committed is not read.
    std::fs::write(work.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let text = detect("main", false);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains("profile     python (from pyproject.toml)"),
        "{text}"
    );
    // A commit that makes it a jest project: no profile fits, and the reason is given.
    common::git(&work, &["rm", "--quiet", "pyproject.toml"]);
    std::fs::remove_file(work.join("Cargo.toml")).unwrap();
    std::fs::write(work.join("package.json"), r#"{"scripts":{"test":"jest"}}"#).unwrap();
    common::git(&work, &["add", "."]);
    common::git(&work, &["commit", "--quiet", "-m", "to node"]);
    common::git(&work, &["push", "--quiet", "origin", "main"]);
    let node = detect("main", false);
    assert!(!node.status.success());
    let text = String::from_utf8_lossy(&node.stdout).into_owned();
    assert!(text.contains("profile     none fits"), "{text}");
    assert!(text.contains("its tests run with jest"), "{text}");
    // The earlier commit is still read as it was.
    let earlier = detect("main~1", true);
    let found: Value = serde_json::from_slice(&earlier.stdout).unwrap();
    assert_eq!(found["profile"], "python");
    for (reference, expected) in [
        ("no-such-branch", "names no commit"),
        ("--upload-pack=x", "--ref"),
    ] {
        let refused = detect(reference, false);
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert!(stderr.contains(expected), "{reference}: {stderr}");
    }
    let missing = common::r2r(dir.path())
        .args(["project", "detect", "--repository", "/no/such/repo"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(!String::from_utf8_lossy(&missing.stderr).is_empty());
}

/// `r2r project add --from-git` fills what it is not told from the repository's tree and
/// says so: the profile, the fix folders, its HEAD's branch, the forge; what it is told
/// wins. A work tree, a tree no profile fits and a `--ref` without `--from-git` are
/// refused, and nothing is added.
#[tokio::test]
async fn project_add_from_git_reads_what_it_is_not_told() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/desk.db", dir.path().display());
    let (bare, work) = common::local_forge_with(dir.path(), "books", |work| {
        std::fs::create_dir_all(work.join("src/books")).unwrap();
        std::fs::write(work.join("pyproject.toml"), "[project]\nname = \"books\"\n").unwrap();
        std::fs::write(work.join("src/books/__init__.py"), "").unwrap();
    })
    .await;
    let r2r = |args: &[&str]| {
        common::r2r(dir.path())
            .env("DATABASE_URL", &db)
            .args(args)
            .output()
            .unwrap()
    };
    let bare_path = bare.to_str().unwrap();
    let added = r2r(&["project", "add", "--id", "books", "--from-git", bare_path]);
    let stdout = String::from_utf8_lossy(&added.stdout).into_owned();
    assert!(
        added.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert!(
        stdout.contains("detected  profile python (from pyproject.toml); fix paths src/books/; branch main; component books"),
        "{stdout}"
    );
    let listed = String::from_utf8_lossy(&r2r(&["project", "list"]).stdout).into_owned();
    let row = listed
        .lines()
        .find(|l| l.starts_with("books"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        row.contains("python") && row.contains("src/books/") && row.contains("books.git"),
        "{row}"
    );
    // What the owner says wins over what is read.
    let (other, _) = common::local_forge_with(&dir.path().join("o"), "tally", |work| {
        std::fs::create_dir_all(work.join("src/tally")).unwrap();
        std::fs::write(work.join("pyproject.toml"), "[project]\nname = \"tally\"\n").unwrap();
        std::fs::write(work.join("src/tally/__init__.py"), "").unwrap();
    })
    .await;
    let told = r2r(&[
        "project",
        "add",
        "--id",
        "tally",
        "--from-git",
        other.to_str().unwrap(),
        "--fix-paths",
        "src/tally/core/",
        "--components",
        "tally-ui",
    ]);
    let stdout = String::from_utf8_lossy(&told.stdout).into_owned();
    assert!(
        told.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&told.stderr)
    );
    assert!(
        stdout.contains("detected  profile python") && !stdout.contains("fix paths src/tally/;"),
        "{stdout}"
    );
    let listed = String::from_utf8_lossy(&r2r(&["project", "list"]).stdout).into_owned();
    let row = listed
        .lines()
        .find(|l| l.starts_with("tally"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        row.contains("src/tally/core/") && row.contains("tally-ui"),
        "{row}"
    );
    // Refusals: a work tree, a jest tree, --ref alone; each adds nothing.
    let (jest, _) = common::local_forge_with(&dir.path().join("j"), "jesty", |work| {
        std::fs::write(work.join("package.json"), r#"{"scripts":{"test":"jest"}}"#).unwrap();
    })
    .await;
    for (args, said) in [
        (
            vec![
                "project",
                "add",
                "--id",
                "wt",
                "--from-git",
                work.to_str().unwrap(),
            ],
            "not a bare git repository",
        ),
        (
            vec![
                "project",
                "add",
                "--id",
                "jesty",
                "--from-git",
                jest.to_str().unwrap(),
            ],
            "its tests run with jest",
        ),
        (
            vec!["project", "add", "--id", "loose", "--ref", "main"],
            "--from-git",
        ),
    ] {
        let refused = r2r(&args);
        let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert!(!refused.status.success(), "{args:?}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
    // A tree with more package folders than a project may name: refused, asking for them.
    let (many, _) = common::local_forge_with(&dir.path().join("m"), "many", |work| {
        std::fs::write(work.join("setup.py"), "").unwrap();
        for n in 0..20 {
            common::write(work, &format!("pkg{n}/__init__.py"), "");
        }
    })
    .await;
    let refused = r2r(&[
        "project",
        "add",
        "--id",
        "many",
        "--from-git",
        many.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(!refused.status.success());
    assert!(
        stderr.contains("20 folders") && stderr.contains("--fix-paths"),
        "{stderr}"
    );
    let listed = String::from_utf8_lossy(&r2r(&["project", "list"]).stdout).into_owned();
    for id in ["wt", "jesty", "loose", "many"] {
        assert!(!listed.lines().any(|l| l.starts_with(id)), "{listed}");
    }
}

/// The desk's project form, given only an id and a bare repository, fills the rest from the
/// repository's tree as `project add --from-git` does; the crew page then shows what was
/// read for the owner to change (a folder named like markup is never proposed). A tree no profile fits is
/// refused naming the profile, and nothing is added.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_project_form_reads_what_the_owner_left_empty_from_the_tree() {
    let desk = common::owner_desk(&[]);
    let base = desk.server.base.clone();
    let dir = tempfile::tempdir().unwrap();
    let hostile = "<img src=x onerror=alert(1)>";
    let (bare, _) = common::local_forge_with(dir.path(), "abacus", |work| {
        std::fs::write(
            work.join("pyproject.toml"),
            "[project]\nname = \"abacus\"\n",
        )
        .unwrap();
        common::write(work, "src/abacus/__init__.py", "");
        common::write(work, &format!("src/{hostile}/__init__.py"), "");
    })
    .await;
    let (jest, _) = common::local_forge_with(&dir.path().join("j"), "jesty", |work| {
        std::fs::write(work.join("package.json"), r#"{"scripts":{"test":"jest"}}"#).unwrap();
    })
    .await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let (cookie, csrf) = sign_in(&client, &base, OWNER, PASSWORD).await;
    let refused = post(
        &client,
        &base,
        Some(&cookie),
        None,
        &[
            ("csrf", csrf.as_str()),
            ("mode", "add"),
            ("id", "jesty"),
            ("forge", jest.to_str().unwrap()),
        ],
    )
    .await;
    assert_eq!(refused.0, 400, "{}", refused.1);
    let answer: Value = serde_json::from_str(&refused.1).unwrap();
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .starts_with("profile: no profile fits"),
        "{answer}"
    );
    let (status, answer) = post(
        &client,
        &base,
        Some(&cookie),
        None,
        &[
            ("csrf", csrf.as_str()),
            ("mode", "add"),
            ("id", "abacus"),
            ("forge", bare.to_str().unwrap()),
        ],
    )
    .await;
    assert!(status < 400, "{status} {answer}");
    let page = client
        .get(format!("{base}/desk/crew"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-project=\"abacus\""), "{page}");
    assert!(
        !page.contains("data-project=\"jesty\""),
        "nothing of the refused one"
    );
    assert!(
        page.contains("src/abacus/"),
        "the fix folder read from the tree"
    );
    assert!(
        !page.contains("onerror"),
        "a folder named like markup is never proposed, so never shown"
    );
}
