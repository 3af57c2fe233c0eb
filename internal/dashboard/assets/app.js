// Live updates: the server pushes the whole content first, then only the
// sections that changed (the fleet, the queue, one JobSet...); the browser
// reconnects by itself and then gets the whole content again.
(function () {
  const live = document.getElementById("live");
  const content = document.getElementById("content");
  const state = (s, text) => { live.dataset.state = s; live.textContent = text; };
  const updated = () => state("live", "live, updated " + new Date().toLocaleTimeString());
  const events = new EventSource("events");
  events.addEventListener("page", (e) => { content.innerHTML = e.data; updated(); });
  events.addEventListener("section", (e) => {
    const nl = e.data.indexOf("\n");
    const el = document.getElementById(e.data.slice(0, nl));
    if (el) {
      const open = el.querySelector("details[open]") !== null;
      el.outerHTML = e.data.slice(nl + 1);
      const now = document.getElementById(e.data.slice(0, nl));
      if (open && now) now.querySelector("details")?.setAttribute("open", "");
    }
    updated();
  });
  events.onerror = () => state("lost", "connection lost, reconnecting…");
})();
