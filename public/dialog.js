// Confirmations as modal dialogs on the owners' desk. Without this script every action button
// leads to a confirmation page that says what will happen; with it, the same page's question
// opens over the current page instead: a modal <dialog> (the rest of the page is inert),
// labelled by its heading and described by its consequences, Tab kept inside it, Escape or
// Cancel closing it, and focus returned to the button that opened it. The question comes from
// the server, so it is always the same words and the same CSRF-carrying form.
(function () {
  'use strict';
  if (!window.fetch || !window.DOMParser || typeof window.HTMLDialogElement !== 'function') return;

  var busy = false;
  var FOCUSABLE = 'a[href], button:not([disabled]), textarea:not([disabled]), select:not([disabled]), ' +
    'input:not([type="hidden"]):not([disabled]), [tabindex]:not([tabindex="-1"])';

  function focusables(root) {
    return Array.prototype.filter.call(root.querySelectorAll(FOCUSABLE), function (el) {
      return el.getClientRects().length > 0;
    });
  }

  function open(question, opener) {
    var dialog = document.createElement('dialog');
    dialog.className = 'panel narrow confirm-dialog';
    dialog.setAttribute('role', 'alertdialog');
    dialog.setAttribute('aria-modal', 'true');
    dialog.innerHTML = question.innerHTML;
    var heading = dialog.querySelector('h1');
    if (heading) {
      // A dialog's heading sits under the page's own h1.
      var h2 = document.createElement('h2');
      h2.id = heading.id;
      h2.textContent = heading.textContent;
      heading.replaceWith(h2);
      dialog.setAttribute('aria-labelledby', h2.id);
    }
    if (question.getAttribute('aria-describedby')) dialog.setAttribute('aria-describedby', question.getAttribute('aria-describedby'));

    dialog.addEventListener('keydown', function (event) {
      if (event.key !== 'Tab') return;
      var items = focusables(dialog);
      if (items.length === 0) return;
      var first = items[0];
      var last = items[items.length - 1];
      if (event.shiftKey && document.activeElement === first) {
        event.preventDefault();
        last.focus();
      } else if (!event.shiftKey && document.activeElement === last) {
        event.preventDefault();
        first.focus();
      }
    });
    var cancel = Array.prototype.find.call(dialog.querySelectorAll('a'), function (a) {
      return a.textContent.trim() === 'Cancel';
    });
    if (cancel) {
      cancel.addEventListener('click', function (event) {
        event.preventDefault();
        dialog.close();
      });
    }
    dialog.addEventListener('close', function () {
      dialog.remove();
      if (opener && document.contains(opener)) opener.focus();
    });

    document.body.appendChild(dialog);
    dialog.showModal();
    // Where a person types, start there; otherwise on Cancel, the choice that changes nothing.
    var start = dialog.querySelector('textarea, input:not([type="hidden"])') || cancel || focusables(dialog)[0];
    if (start) start.focus();
  }

  document.addEventListener('submit', function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute('data-confirm')) return;
    event.preventDefault();
    // One question at a time: a second click while it loads, or with a dialog open, is ignored.
    if (busy || document.querySelector('dialog.confirm-dialog')) return;
    busy = true;
    var opener = event.submitter || form.querySelector('button');
    // `form.action` would be the hidden input named "action": read the attribute.
    fetch(form.getAttribute('action'), {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'text/html' },
      body: new URLSearchParams(new FormData(form)).toString(),
    })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var question = new DOMParser().parseFromString(html, 'text/html').querySelector('[role="alertdialog"]');
        // No question (a refusal, a signed-out session): show the desk's answer as a page.
        if (!question) {
          HTMLFormElement.prototype.submit.call(form);
          return;
        }
        open(question, opener);
      })
      .catch(function () { HTMLFormElement.prototype.submit.call(form); })
      .then(function () { busy = false; });
  });
})();
