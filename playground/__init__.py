"""The app's helpers: what app.py and the pages in pages/ share. The engine is ``ctxlab`` (it never
imports streamlit); this package only wires Streamlit widgets, session state and caches to it. Importing
the package imports nothing; each module imports what it needs (streamlit, without a running server).

Where things live:

* ``state``: every session-state key the sidebar owns and its default (``DEFAULTS``), ``init_state``,
  ``persist`` (keys kept across page switches), the bundled samples, and ``text_hash`` (a conversation
  text's cache key, with the unlogged-prefix size the user gave).
* ``conversation``: the conversation in use, parsed once per text and cached (``parse``,
  ``current_conversation``, ``require_conversation``), its strategy view (``current_view``), its parts
  (a multi-conversation file), an input read as a named format, a generated conversation's text.
* ``input_panel``: the shared sidebar every page draws (``input_panel``: language, sample / paste /
  upload / generate, the format, conversation and sub-agent pickers, model and budget, model settings),
  and a trace's unlogged-prefix input (``prefix_input``).
* ``budget``: the context limit as a model change leaves it, the tool definitions the budget counts,
  ``current_budget``.
* ``language``: the interface language of a run (``choose_language``, ``LANG_KEY``) and its switch.
* ``navigation``: ``follow_app_navigation`` (app.py's navigation, even on a deep link).
* ``llm_settings``: the bring-your-own-model panel and ``current_llm``.
* ``prices``: the bundled price of the sidebar's model and the user's override (``price_panel``).
* ``handoff``: another page's conversation or a sweep point made the Strategy Lab's (``open_in_lab``,
  ``load_point_into_lab``).
* ``markdown``: user text shown safely in Markdown (``md_escape``, ``md_code``).
* ``session_store``: the live-session store the Agents and Chat pages share (``open_store``).
* ``widgets``: controls built from the engine's schemas (the strategy picker, table columns, downloads).
* ``lab_cache``: the Strategy Lab's engine calls, cached once per process (plan, replay, measures, figures,
  exports); ``lab_table``: its message table, paged.
* ``tune_job``: the Tune page's sweep in a child process (progress, cancel, heartbeat).
* ``tour``: the newcomer's tour app.py shows above the pages.
"""
