// The list upload's drop zone: a file dropped on it becomes the file
// input's. Without JavaScript the input works as it is.
(function () {
  var zone = document.querySelector("[data-dropzone]");
  if (!zone || typeof DataTransfer === "undefined") return;
  var input = zone.querySelector("input[type=file]");
  var hint = zone.querySelector(".drop-hint");
  if (hint) hint.hidden = false;
  function over(e) { e.preventDefault(); zone.classList.add("over"); }
  function leave() { zone.classList.remove("over"); }
  zone.addEventListener("dragenter", over);
  zone.addEventListener("dragover", over);
  zone.addEventListener("dragleave", leave);
  zone.addEventListener("drop", function (e) {
    e.preventDefault();
    leave();
    var files = e.dataTransfer && e.dataTransfer.files;
    if (!files || files.length === 0) return;
    var dt = new DataTransfer();
    dt.items.add(files[0]);
    input.files = dt.files;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    input.focus();
  });
})();
