// Copy buttons: a button with data-copy="ID" copies the value of the
// element with that id. Without JavaScript the value stays selectable.
document.addEventListener("click", function (e) {
  var b = e.target.closest("button[data-copy]");
  if (!b) return;
  var input = document.getElementById(b.getAttribute("data-copy"));
  var note = b.parentElement.querySelector(".copied");
  function done(msg) { if (note) note.textContent = msg; }
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(input.value).then(function () { done("Copied."); }, function () { done("Select the text and copy it."); });
  } else {
    input.select();
    try { document.execCommand("copy"); done("Copied."); } catch (err) { done("Select the text and copy it."); }
  }
});

// A link marked data-follow is followed at once (the checkout's payment
// page); without JavaScript the buyer clicks it.
document.addEventListener("DOMContentLoaded", function () {
  var a = document.querySelector("a[data-follow]");
  if (a) window.location.assign(a.href);
});
