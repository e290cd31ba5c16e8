"""turnline core: dsh session logs, the session store and its fork API. No UI imports."""
