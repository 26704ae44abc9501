"""Never a silently wrong number: stale captures, caller arrays, foreign arrays, fuzzing."""
