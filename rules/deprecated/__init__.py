"""ODL9xx: deprecated or removed APIs, served from one data table."""
