// Live updates: the server pushes the whole content whenever the cluster
// changes (Server-Sent Events); the browser reconnects by itself.
(function () {
  const live = document.getElementById("live");
  const content = document.getElementById("content");
  const state = (s, text) => { live.dataset.state = s; live.textContent = text; };
  const events = new EventSource("events");
  events.addEventListener("page", (e) => {
    content.innerHTML = e.data;
    state("live", "live, updated " + new Date().toLocaleTimeString());
  });
  events.onerror = () => state("lost", "connection lost, reconnecting…");
})();
