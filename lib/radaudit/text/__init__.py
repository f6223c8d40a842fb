"""Clinical text toolkit: small, documented rules over report and indication text."""
