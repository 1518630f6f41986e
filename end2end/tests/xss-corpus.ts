// Hostile markup for the attack scenarios (attacks.spec.ts): text a stranger or a model can
// put into the desk, written to run script in every context a page could place it in.
//
// Every payload is a function of a sentinel name (`__xss_<n>_<field>`): when the browser runs
// it, it sets `window.<sentinel>` (or `top.<sentinel>` from a nested document) or opens an
// `alert` whose message is the sentinel. The scenarios fail on either, and on served HTML
// that still holds one of a payload's tags unescaped.
//
// All of them fit the shortest field they are used in (a report's title: 200 characters,
// with room left for the words that keep each title its own bug).

/** What every sentinel starts with; nothing else on any page may carry it. */
export const MARK = '__xss';

export interface Payload {
  /** Its number: the `<n>` of its sentinel. */
  n: number;
  /** What it tries. */
  name: string;
  /** The text, given the sentinel it sets. */
  text: (sentinel: string) => string;
}

const w = (s: string) => `window.${s}=1`;

export const CORPUS: Payload[] = [
  { n: 1, name: 'closes </title>', text: (s) => `</title><script>${w(s)}</script>` },
  { n: 2, name: 'closes </textarea>', text: (s) => `</textarea><script>${w(s)}</script>` },
  { n: 3, name: 'closes </style>', text: (s) => `</style><script>${w(s)}</script>` },
  { n: 4, name: 'closes </script>', text: (s) => `</script><script>${w(s)}</script>` },
  { n: 5, name: '<img onerror>', text: (s) => `<img src=x onerror=${w(s)}>` },
  { n: 6, name: '<svg onload>', text: (s) => `<svg onload=${w(s)}>` },
  { n: 7, name: '<svg/onload> without spaces', text: (s) => `<svg/onload=${w(s)}>` },
  { n: 8, name: 'breaks a double-quoted attribute', text: (s) => `" autofocus onfocus="${w(s)}" x="` },
  { n: 9, name: 'breaks a double-quoted attribute and the tag', text: (s) => `"><img src=x onerror=${w(s)}>` },
  { n: 10, name: 'breaks a single-quoted attribute', text: (s) => `' autofocus onfocus='${w(s)}' x='` },
  { n: 11, name: 'breaks a single-quoted attribute and the tag', text: (s) => `'><img src=x onerror=${w(s)}>` },
  { n: 12, name: 'a javascript: URL', text: (s) => `javascript:${w(s)}` },
  { n: 13, name: 'a javascript: URL, entity-encoded', text: (s) => `jav&#x61;script&colon;${w(s)}` },
  { n: 14, name: 'a link to a javascript: URL', text: (s) => `<a href="javascript:${w(s)}">details</a>` },
  { n: 15, name: 'named entities around a tag', text: (s) => `&lt;img src=x onerror=${w(s)}&gt;` },
  { n: 16, name: 'numeric entities around a tag', text: (s) => `&#60;svg onload=${w(s)}&#62;` },
  { n: 17, name: 'JavaScript Unicode escapes', text: (s) => `\\u003cimg src=x onerror=${w(s)}\\u003e` },
  { n: 18, name: 'JavaScript hex escapes', text: (s) => `\\x3cscript\\x3e${w(s)}\\x3c/script\\x3e` },
  // NFKC (the airlock normalises reports) turns these into plain `<` and `>`.
  { n: 19, name: 'full-width angle brackets', text: (s) => `＜script＞${w(s)}＜/script＞` },
  { n: 20, name: '<iframe srcdoc>', text: (s) => `<iframe srcdoc="<script>top.${s}=1</script>"></iframe>` },
  { n: 21, name: '<iframe srcdoc> with entities', text: (s) => `<iframe srcdoc="&lt;img src=x onerror=top.${s}=1&gt;"></iframe>` },
  { n: 22, name: '<math> namespace confusion', text: (s) => `<math><mtext><table><mglyph><style><img src=x onerror=${w(s)}>` },
  { n: 23, name: '<svg><style> mutation', text: (s) => `<svg></p><style><a id="</style><img src=x onerror=${w(s)}>">` },
  { n: 24, name: '<template> breakout', text: (s) => `<template><s></template><img src=x onerror=${w(s)}>` },
  { n: 25, name: '<noscript> mutation', text: (s) => `<noscript><p title="</noscript><img src=x onerror=${w(s)}>">` },
  { n: 26, name: 'valid in a JSON string, breaks a script', text: (s) => `"}]});${w(s)};//` },
  { n: 27, name: 'closes every raw-text element at once', text: (s) => `'"></title></textarea></style></script><svg/onload=${w(s)}>` },
  { n: 28, name: '<details ontoggle>', text: (s) => `<details open ontoggle=${w(s)}>` },
  { n: 29, name: '<object> with a data: URL', text: (s) => `<object data="data:text/html,<script>top.${s}=1</script>"></object>` },
  { n: 30, name: '<input autofocus onfocus>', text: (s) => `<input autofocus onfocus=${w(s)}>` },
  { n: 31, name: 'alert()', text: (s) => `<img src=x onerror="alert('${s}')">` },
  { n: 32, name: 'a Markdown link to javascript:', text: (s) => `[details](javascript:${w(s)})` },
  { n: 33, name: '<svg><script>', text: (s) => `<svg><script>${w(s)}</script></svg>` },
  { n: 34, name: 'an entity inside the handler', text: (s) => `<img src=x onerror=&#119;indow.${s}=1>` },
  { n: 35, name: '<meta http-equiv=refresh>', text: (s) => `<meta http-equiv="refresh" content="0;url=javascript:${w(s)}">` },
  { n: 36, name: 'a second <body onload>', text: (s) => `<body onload=${w(s)}>` },
  { n: 37, name: 'a style attribute', text: (s) => `<p style="background:url(javascript:${w(s)})" onmouseover=${w(s)}>x</p>` },
];

/** The sentinel payload `n` sets when placed in `field`. */
export function sentinel(n: number, field: string): string {
  return `${MARK}_${n}_${field}`;
}

/** One payload placed in one field. */
export interface Placed {
  payload: Payload;
  field: string;
  sentinel: string;
  text: string;
}

export function place(payload: Payload, field: string): Placed {
  const name = sentinel(payload.n, field);
  return { payload, field, sentinel: name, text: payload.text(name) };
}

/** Payloads without whitespace (a contact address may have none). */
export function withoutSpaces(text: string): string {
  return text.replace(/\s+/g, '/');
}

/**
 * What served HTML must never hold for a placed payload: the markup from the payload's last
 * `<` before its sentinel up to the sentinel (`<img src=x onerror=window.__xss_5_title`).
 * Escaped, every `<` is `&lt;`, so the needle cannot appear; the NFKC form counts as well
 * (the airlock stores normalised text). Payloads without a `<` have no needle: the DOM
 * check catches them where they land in markup.
 */
export function needles(placed: { text: string; sentinel: string }): string[] {
  const out = new Set<string>();
  for (const text of [placed.text, placed.text.normalize('NFKC')]) {
    let at = text.indexOf(placed.sentinel);
    while (at >= 0) {
      const open = text.lastIndexOf('<', at);
      if (open >= 0) out.add(text.slice(open, at + placed.sentinel.length));
      at = text.indexOf(placed.sentinel, at + 1);
    }
  }
  return [...out];
}

/**
 * As many payloads as fit in `max` characters, one after another (for fields that hold
 * one longer text: notes, reasons, messages).
 */
export function packed(field: string, max: number, from = CORPUS): { text: string; placed: Placed[] } {
  const placed: Placed[] = [];
  let text = '';
  for (const payload of from) {
    const one = place(payload, field);
    if (text.length + one.text.length + 1 > max) continue;
    text += `${text ? '\n' : ''}${one.text}`;
    placed.push(one);
  }
  return { text, placed };
}
