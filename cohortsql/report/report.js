// Search and sort for the report's tables. Without scripts the report is complete, only static.
(function () {
  "use strict";
  document.body.classList.add("scripted");

  function cellValue(row, column) {
    var text = row.cells[column].textContent.trim();
    var number = Number(text.replace(/,/g, ""));
    return text !== "" && !isNaN(number) ? number : text.toLowerCase();
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    var headers = table.querySelectorAll("thead th");
    headers.forEach(function (header, column) {
      header.addEventListener("click", function () {
        var up = !header.classList.contains("sorted-up");
        headers.forEach(function (other) { other.classList.remove("sorted-up", "sorted-down"); });
        header.classList.add(up ? "sorted-up" : "sorted-down");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, column), y = cellValue(b, column);
          var order = x < y ? -1 : x > y ? 1 : 0;
          return up ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });

  var search = document.getElementById("search");
  var table = document.getElementById("target-table");
  var shown = document.getElementById("shown");
  if (search && table) {
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var texts = rows.map(function (row) { return row.textContent.toLowerCase(); });
    var update = function () {
      var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      var count = 0;
      rows.forEach(function (row, index) {
        var match = words.every(function (word) { return texts[index].indexOf(word) >= 0; });
        row.style.display = match ? "" : "none";
        if (match) { count += 1; }
      });
      shown.textContent = count + " of " + rows.length + " targets";
    };
    search.addEventListener("input", update);
    update();
  }
})();
