// Fills the invitation field from the link's fragment (which never reaches the server) and
// removes the fragment from the address bar. Without this script the field is pasted by hand.
(function () {
  'use strict';
  var field = document.getElementById('invite-token');
  var secret = window.location.hash.replace(/^#/, '').trim();
  if (!field || !secret) return;
  field.value = secret;
  if (window.history && window.history.replaceState) {
    window.history.replaceState(null, '', window.location.pathname);
  }
})();
