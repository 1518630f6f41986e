// Live updates for the owners' desk (the pages themselves work without this script).
// The server says when what a page shows has changed (server-sent events, /desk/live); the
// page then fetches itself again and swaps its main content in place, keeping the reader's
// focus target and announcing the update politely to screen readers.
(function () {
  'use strict';
  var marker = document.querySelector('[data-live]');
  if (!marker || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var source = new EventSource(marker.getAttribute('data-live'));
  var busy = false;
  function say(text) {
    var status = document.getElementById('live-status');
    if (status) status.textContent = text;
  }
  source.addEventListener('changed', function () {
    if (busy) return;
    busy = true;
    say('Updating…');
    fetch(window.location.href, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, 'text/html').querySelector('main');
        var current = document.querySelector('main');
        if (fresh && current) {
          var active = document.activeElement && document.activeElement.id;
          current.innerHTML = fresh.innerHTML;
          if (active && document.getElementById(active)) document.getElementById(active).focus();
        }
        say('Updated ' + new Date().toLocaleTimeString() + '.');
      })
      .catch(function () { say('Could not update; reload the page to see the latest.'); })
      .then(function () { busy = false; });
  });
})();
